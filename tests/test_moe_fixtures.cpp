// Mixture-of-experts checkpoints made by the real producers (fixtures/moe/<arch>/<form>/,
// tools/gen_moe_fixtures.py: transformers save_pretrained, ModelOpt export_hf_checkpoint,
// llm-compressor save_compressed, llama.cpp's convert_hf_to_gguf.py) of tiny random Qwen3-MoE,
// Mixtral, OLMoE and Qwen2-MoE (shared expert) models, run against the frameworks' own logits.
//
// Bounds, as tests/test_arch_fixtures.cpp argues them (the same bf16 weights on both sides,
// float32 rounding only): f32 on `float`, and a16 / f32 on `modelopt-w4a16`, against transformers'
// and ModelOpt's fake-quant float32 logits within 5e-5. A router whose top-2 scores are within
// rounding of each other would pick another expert on one side and move a position by far more;
// none of the fixtures' positions does (the test would say so). w4a4 against ModelOpt's NVFP4
// fake quant: an activation rounded to the other E2M1 neighbour moves a whole step (the arch
// fixtures' argument): the median and maximum must stay below what activation quantization moves
// (the same run against the W4A16 fake quant).
//
// llama.cpp: its conversion of the float model (BF16 weights, F32 router) runs in our f32 mode
// within the same bound of transformers, and its NVFP4 conversion of ModelOpt's export
// (qwen3_moe_i64: expert width 64, which llama.cpp's NVFP4 repack needs) holds the same NVFP4
// bytes and scales as our `convert` of that directory, and runs to the same bits.
#include <bit>
#include <cstdio>
#include <cstring>

#include "arch_fixtures.h"
#include "io_test_util.h"
#include "nvfp4/convert.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"
#include "nvfp4/safetensors.h"

#include <filesystem>
#include <map>

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

constexpr double kF32Bound = 5e-5;

std::string moe_root() { return fixture_path("moe"); }
std::string dir_of(const std::string& arch, const std::string& form) { return moe_root() + "/" + arch + "/" + form; }

class MoeFixture : public ::testing::TestWithParam<std::string> {
 protected:
  ThreadPool pool_{2};
  std::unique_ptr<Model> load(const Checkpoint& ck, Mode mode) {
    LoadOptions lo;
    lo.mode = mode;
    return Model::load(ck, lo);
  }
};

TEST_P(MoeFixture, EveryFormOpensAsItsProducerWroteIt) {
  const std::string arch = GetParam();
  for (const FormInfo& f : kForms) {
    SCOPED_TRACE(f.form);
    auto ck = Checkpoint::open(dir_of(arch, f.form));
    EXPECT_EQ(ck->info().producer, f.producer);
    EXPECT_EQ(ck->info().algorithm, f.algorithm);
    EXPECT_EQ(ck->info().has_input_scales, f.w4a4);
    auto m = load(*ck, Mode::f32);
    const ModelConfig& c = m->config();
    EXPECT_EQ(c.n_expert, 8);
    int nvfp4 = 0, routers = 0;
    for (const TensorEntry& e : ck->tensors()) {
      nvfp4 += e.storage == Storage::nvfp4;
      if (e.name.find("ffn_gate_inp") != std::string::npos) {
        ++routers;
        EXPECT_NE(e.storage, Storage::nvfp4) << e.name << ": routers are excluded from quantization";
      }
    }
    const int per_layer = 4 + 3 * 8 + (c.n_ff_shexp > 0 ? 3 : 0);
    EXPECT_EQ(nvfp4, std::string(f.form) == "float" ? 0 : 2 * per_layer);
    EXPECT_EQ(routers, c.n_ff_shexp > 0 ? 4 : 2);
  }
}

TEST_P(MoeFixture, F32MatchesTransformers) {
  const ArchOracle o(GetParam(), moe_root());
  auto ck = Checkpoint::open(dir_of(GetParam(), "float"));
  auto m = load(*ck, Mode::f32);
  Diff d;
  against(o, *m, "float", pool_, d);
  std::printf("%s float f32 vs transformers: max |diff| %.3g (|logit| <= %.3g), argmax differs %d/%d\n", GetParam().c_str(),
              d.max_abs, d.max_ref, d.argmax_differ, d.argmax_checked);
  EXPECT_LE(d.max_abs, kF32Bound);
  EXPECT_EQ(d.argmax_differ, 0);
  EXPECT_GT(d.max_ref, 0.5);
  for (size_t p = 0; p < o.prompts(); ++p) EXPECT_EQ(greedy(*m, o.ids(p), 16, pool_), o.greedy(p)) << "prompt " << p;
}

TEST_P(MoeFixture, A16MatchesModelOptFakeQuantW4A16) {
  const ArchOracle o(GetParam(), moe_root());
  for (const char* form : {"modelopt-w4a16", "modelopt-nvfp4"}) {
    SCOPED_TRACE(form);
    auto ck = Checkpoint::open(dir_of(GetParam(), form));
    for (Mode mode : {Mode::a16, Mode::f32}) {
      auto m = load(*ck, mode);
      Diff d;
      against(o, *m, "modelopt_w4a16", pool_, d);
      std::printf("%s %s %s vs modelopt_w4a16: max |diff| %.3g, argmax differs %d/%d\n", GetParam().c_str(), form,
                  std::string(mode_name(mode)).c_str(), d.max_abs, d.argmax_differ, d.argmax_checked);
      EXPECT_LE(d.max_abs, kF32Bound);
      EXPECT_EQ(d.argmax_differ, 0);
    }
  }
}

TEST_P(MoeFixture, W4A4RunsNearModelOptFakeQuantNvfp4) {
  const ArchOracle o(GetParam(), moe_root());
  auto ck = Checkpoint::open(dir_of(GetParam(), "modelopt-nvfp4"));
  auto m = load(*ck, Mode::w4a4);
  Diff d, a16ref;
  against(o, *m, "modelopt_nvfp4", pool_, d);
  against(o, *m, "modelopt_w4a16", pool_, a16ref);
  std::printf("%s w4a4 vs modelopt_nvfp4: max |diff| %.3g (median position %.3g, %d of %d positions within 0.01); "
              "vs W4A16 fake quant %.3g (median %.3g)\n",
              GetParam().c_str(), d.max_abs, d.median(), d.within(0.01), d.positions, a16ref.max_abs, a16ref.median());
  EXPECT_LT(d.median(), a16ref.median());
  EXPECT_LT(d.max_abs, a16ref.max_abs);
}

TEST_P(MoeFixture, CompressedTensorsFormsRunInEveryModeTheyServe) {
  const ArchOracle o(GetParam(), moe_root());
  for (const char* form : {"ct-nvfp4", "ct-nvfp4a16"}) {
    auto ck = Checkpoint::open(dir_of(GetParam(), form));
    std::vector<Mode> modes = {Mode::a16, Mode::a16q8, Mode::f32};
    if (ck->info().has_input_scales) modes.push_back(Mode::w4a4);
    for (Mode mode : modes) {
      auto m = load(*ck, mode);
      Diff d;
      against(o, *m, "modelopt_w4a16", pool_, d);  // another quantizer: reported, bounded loosely
      std::printf("%s %s %s vs modelopt_w4a16: max |diff| %.3g, median %.3g\n", GetParam().c_str(), form,
                  std::string(mode_name(mode)).c_str(), d.max_abs, d.median());
      Diff f;
      against(o, *m, "float", pool_, f);
      EXPECT_LT(d.median(), f.median() + 0.5) << form << " " << mode_name(mode);
    }
  }
}

TEST_P(MoeFixture, LlamaCppFloatGgufRunsAsTransformers) {
  const ArchOracle o(GetParam(), moe_root());
  auto ck = Checkpoint::open(moe_root() + "/" + GetParam() + "/llamacpp-float.gguf");
  auto m = load(*ck, Mode::f32);
  Diff d;
  against(o, *m, "float", pool_, d);
  std::printf("%s llama.cpp's float GGUF, f32 vs transformers: max |diff| %.3g\n", GetParam().c_str(), d.max_abs);
  EXPECT_LE(d.max_abs, kF32Bound);
  // The greedy tokens llama.cpp itself produced on this file (llamacpp_greedy.json), which its
  // generator checked against transformers'.
  std::ifstream f(moe_root() + "/" + GetParam() + "/llamacpp_greedy.json");
  const auto j = nlohmann::json::parse(f);
  const int n = j["n"].get<int>();
  for (size_t p = 0; p < j["prompts"].size(); ++p) {
    const auto ids = j["prompts"][p].get<std::vector<int32_t>>();
    EXPECT_EQ(greedy(*m, ids, n, pool_), j["transformers_float"][p].get<std::vector<int32_t>>()) << "prompt " << p;
    if (j["float"]["ok"].get<bool>()) {
      EXPECT_EQ(greedy(*m, ids, n, pool_), j["float"]["greedy"][p].get<std::vector<int32_t>>()) << "llama.cpp, prompt " << p;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Moe, MoeFixture, ::testing::Values("qwen3_moe", "mixtral", "olmoe", "qwen2_moe"),
                         [](const auto& i) { return i.param; });

// llama.cpp's NVFP4 conversion of ModelOpt's export and ours: the same tensors, bytes and scales;
// the same model.
TEST(MoeLlamaCpp, OurConvertWritesLlamaCppsNvfp4MoeGguf) {
  const std::string d = moe_root() + "/qwen3_moe_i64";
  for (const char* form : {"modelopt-nvfp4", "modelopt-w4a16"}) {
    SCOPED_TRACE(form);
    ScratchDir tmp;
    const std::string ours = tmp.path + "/ours.gguf";
    ConvertOptions opt;
    opt.verify = true;
    convert(d + "/" + form, ours, opt);
    const auto a = gguf::File::open(d + "/llamacpp-" + form + ".gguf"), b = gguf::File::open(ours);
    int same = 0;
    for (const auto& ta : a.tensors()) {
      if (ta.type != ggml::NVFP4 && ta.name.find("scale") == std::string::npos) continue;
      const gguf::TensorInfo* tb = b.find_tensor(ta.name);
      ASSERT_NE(tb, nullptr) << ta.name << " is in llama.cpp's file, not in ours";
      EXPECT_EQ(ta.ne, tb->ne) << ta.name;
      EXPECT_EQ(ta.type, tb->type) << ta.name;
      ASSERT_EQ(ta.nbytes, tb->nbytes) << ta.name;
      EXPECT_EQ(std::memcmp(ta.data, tb->data, static_cast<size_t>(ta.nbytes)), 0) << ta.name;
      ++same;
    }
    EXPECT_GT(same, 2 * 3 * 2);  // stacked experts and their scales, both layers
    const auto ca = Checkpoint::open(d + "/llamacpp-" + form + ".gguf"), cb = Checkpoint::open(d + "/" + form);
    std::vector<Mode> modes = {Mode::a16q8};
    if (std::string(form) == "modelopt-nvfp4") modes.push_back(Mode::w4a4);
    ThreadPool pool(2);
    const ArchOracle o("qwen3_moe_i64", moe_root());
    for (Mode mode : modes) {
      LoadOptions lo;
      lo.mode = mode;
      const auto ma = Model::load(*ca, lo), mb = Model::load(*cb, lo);
      for (size_t p = 0; p < o.prompts(); ++p)
        EXPECT_TRUE(eval_all(*ma, o.ids(p), pool) == eval_all(*mb, o.ids(p), pool)) << mode_name(mode) << " prompt " << p;
    }
  }
}

}  // namespace

namespace {

// A copy of fixtures/moe/<arch>/<form> with `edit` applied to its model.safetensors (tensors by
// name: replace the bytes, or drop with an empty vector) and to config.json's text.
std::string edited_copy(const ScratchDir& tmp, const std::string& arch, const std::string& form,
                        const std::map<std::string, std::vector<uint8_t>>& replace,
                        const std::map<std::string, std::vector<uint8_t>>& add = {}) {
  namespace fs = std::filesystem;
  const std::string src = dir_of(arch, form), dst = tmp.path + "/" + form;
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src))
    if (e.path().filename() != "model.safetensors") fs::copy_file(e.path(), dst + "/" + e.path().filename().string());
  const auto f = safetensors::File::open(src + "/model.safetensors");
  std::vector<safetensors::WriteTensor> w;
  for (const auto& t : f.tensors()) {
    auto it = replace.find(t.name);
    if (it != replace.end() && it->second.empty()) continue;  // dropped
    const uint8_t* data = it != replace.end() ? it->second.data() : t.data;
    w.push_back({t.name, t.dtype, t.shape, data, static_cast<size_t>(t.nbytes())});
  }
  for (const auto& [name, bytes] : add) w.push_back({name, safetensors::Dtype::F32, {static_cast<int64_t>(bytes.size() / 4)}, bytes.data(), bytes.size()});
  safetensors::write(dst + "/model.safetensors", w, f.metadata());
  return dst;
}

std::vector<uint8_t> f32_bytes(float v) {
  std::vector<uint8_t> b(4);
  std::memcpy(b.data(), &v, 4);
  return b;
}

void expect_refused(const std::string& dir, const std::string& tensor, const std::string& rule) {
  try {
    const auto ck = Checkpoint::open(dir);
    Model::load(*ck, LoadOptions{});
    ADD_FAILURE() << dir << " accepted; expected " << rule;
  } catch (const Error& e) {
    EXPECT_EQ(e.tensor(), tensor) << e.what();
    EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
  }
}

// Malformed MoE checkpoints, each refused naming its tensor (layer and expert) and rule.
TEST(MoeRefusals, BrokenExpertsAreRefusedNamingLayerAndExpert) {
  {  // llm-compressor's uninitialised input_global_scale of an expert no calibration token reached
    ScratchDir tmp;
    const std::string t = "model.layers.1.mlp.experts.5.up_proj.input_global_scale";
    for (float bad : {5e31f, 1.3e-43f}) {
      ScratchDir t2;
      expect_refused(edited_copy(t2, "qwen3_moe", "ct-nvfp4", {{t, f32_bytes(bad)}}), t, "activation scale outside what calibration gives");
    }
  }
  {  // a 0 tensor scale (ModelOpt's export of an expert whose weights are all zero)
    ScratchDir tmp;
    const std::string t = "model.layers.0.mlp.experts.2.down_proj.weight_scale_2";
    expect_refused(edited_copy(tmp, "qwen3_moe", "modelopt-w4a16", {{t, f32_bytes(0.0f)}}), t, "tensor scale must be finite and positive");
  }
  {  // an expert missing
    ScratchDir tmp;
    const std::string m = "model.layers.1.mlp.experts.7.gate_proj.";
    const std::string dir = edited_copy(tmp, "qwen3_moe", "modelopt-w4a16",
                                        {{m + "weight", {}}, {m + "weight_scale", {}}, {m + "weight_scale_2", {}}});
    expect_refused(dir, m + "weight", "missing tensor");  // the release's own name for the absent expert
  }
  {  // a tensor no entry maps: neither used nor excluded
    ScratchDir tmp;
    const std::string dir = edited_copy(tmp, "olmoe", "float", {}, {{"model.layers.0.mlp.experts.3.bias_extra", f32_bytes(1.0f)}});
    expect_refused(dir, "model.layers.0.mlp.experts.3.bias_extra", "does not use");
  }
}

}  // namespace

namespace {

// convert of a ModelOpt MoE export to another directory repacks the experts and leaves the
// excluded routers as they are (listed in exclude_modules); the result has the input's weights.
TEST(MoeConvert, ModelOptDirectoryToDirectoryKeepsRoutersExcluded) {
  ScratchDir tmp;
  const std::string out = tmp.path + "/out";
  ConvertOptions opt;
  opt.verify = true;
  const ConvertReport r = convert(dir_of("qwen2_moe", "modelopt-nvfp4"), out, opt);
  EXPECT_EQ(r.quantized, 0);
  const auto a = Checkpoint::open(dir_of("qwen2_moe", "modelopt-nvfp4")), b = Checkpoint::open(out);
  for (const TensorEntry& e : a->tensors()) {
    const TensorEntry* f = b->find(e.name);
    ASSERT_NE(f, nullptr) << e.name;
    EXPECT_EQ(f->storage, e.storage) << e.name;
  }
  std::ifstream q(out + "/hf_quant_config.json");
  const auto j = nlohmann::json::parse(q);
  const auto ex = j["quantization"]["exclude_modules"].get<std::vector<std::string>>();
  for (const char* m : {"model.layers.0.mlp.gate", "model.layers.1.mlp.shared_expert_gate"})
    EXPECT_NE(std::find(ex.begin(), ex.end(), m), ex.end()) << m;
  ThreadPool pool(2);
  const ArchOracle o("qwen2_moe", moe_root());
  LoadOptions lo;
  lo.mode = Mode::w4a4;
  const auto ma = Model::load(*a, lo), mb = Model::load(*b, lo);
  EXPECT_TRUE(eval_all(*ma, o.ids(1), pool) == eval_all(*mb, o.ids(1), pool));
}

}  // namespace

namespace {

// rtn (`convert`'s default) of the float MoE model is ModelOpt's export, byte for byte: every
// expert's codes, block scales and tensor scale, gate and up unified per expert (and for the
// shared expert), as ModelOpt's W4A16 export of the same bf16 model holds them.
TEST_P(MoeFixture, RtnOfTheFloatModelIsModelOptsExport) {
  ScratchDir tmp;
  const std::string out = tmp.path + "/rtn";
  ConvertOptions opt;
  convert(dir_of(GetParam(), "float"), out, opt);
  const auto ours = Checkpoint::open(out), mo = Checkpoint::open(dir_of(GetParam(), "modelopt-w4a16"));
  int same = 0;
  for (const TensorEntry& e : mo->tensors()) {
    if (e.storage != Storage::nvfp4) continue;
    const RowMatrix a = mo->nvfp4(e.name), b = ours->nvfp4(e.name);
    EXPECT_EQ(a.codes, b.codes) << e.name;
    EXPECT_EQ(a.scales, b.scales) << e.name;
    EXPECT_EQ(std::bit_cast<uint32_t>(a.scale2), std::bit_cast<uint32_t>(b.scale2)) << e.name;
    ++same;
  }
  EXPECT_GE(same, 56);
}

}  // namespace

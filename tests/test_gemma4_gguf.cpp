// Gemma 4 in llama.cpp's GGUF layout (io/gemma4_layout.h), read as ours, on the committed
// fixtures fixtures/gemma4, fixtures/gemma4-e2b and fixtures/gemma4-moe: llama.cpp's own
// convert_hf_to_gguf.py (tools/hybrid_llamacpp.py; CI has neither it nor torch) wrote
// llamacpp-float.gguf from float/ (bf16 kept: exact) and, where it converts, llamacpp-modelopt-nvfp4.gguf
// from modelopt-nvfp4/. Its layout holds per-layer arrays (head_count_kv, feed_forward_length),
// the global layers' sizes under the plain keys and the sliding ones' under _swa, proportional
// RoPE as a rope_freqs tensor, K = V as a missing attn_v, the experts' gate and up stacked.
//  - the file runs in every mode to the same bits as the HF directory it came from, and in f32
//    within 5e-5 of transformers;
//  - llama.cpp's NVFP4 repack runs to the same bits as ModelOpt's directory;
//  - a file whose layers this engine cannot hold (two KV head counts among the sliding layers,
//    RoPE factors that are not proportional RoPE's) is refused naming the key or tensor.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "arch_fixtures.h"
#include "io_test_util.h"
#include "llamacpp_layout_checks.h"
#include "nvfp4/convert.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"
#include "nvfp4/gguf_writer.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

constexpr double kF32Bound = 5e-5;

std::string at(const std::string& fixture, const std::string& what) { return fixture_path(fixture) + "/" + what; }
bool exists(const std::string& p) { return std::filesystem::exists(p); }


class Gemma4Gguf : public ::testing::TestWithParam<std::string> {
 protected:
  ThreadPool pool_{2};
};

void expect_same_layers(const ModelConfig& g, const ModelConfig& h) {
  EXPECT_EQ(g.arch, "gemma4");
  EXPECT_EQ(g.n_layer, h.n_layer);
  EXPECT_EQ(g.n_embd, h.n_embd);
  EXPECT_EQ(g.n_head, h.n_head);
  EXPECT_EQ(g.n_vocab, h.n_vocab);
  EXPECT_EQ(g.embd_scale, h.embd_scale);
  EXPECT_EQ(g.final_softcap, h.final_softcap);
  EXPECT_EQ(g.n_expert, h.n_expert);
  EXPECT_EQ(g.n_expert_used, h.n_expert_used);
  ASSERT_EQ(g.attn_layers.size(), h.attn_layers.size());
  for (size_t l = 0; l < g.attn_layers.size(); ++l) {
    const AttnLayerConfig &a = g.attn_layers[l], &b = h.attn_layers[l];
    EXPECT_EQ(a.head_dim, b.head_dim) << "layer " << l;
    EXPECT_EQ(a.n_kv, b.n_kv) << "layer " << l;
    EXPECT_EQ(a.window, b.window) << "layer " << l;
    EXPECT_EQ(a.k_eq_v, b.k_eq_v) << "layer " << l;
    EXPECT_EQ(a.scale, b.scale) << "layer " << l;
    EXPECT_EQ(a.kv_from, b.kv_from) << "layer " << l;
    ASSERT_GE(a.rope, 0);
    ASSERT_GE(b.rope, 0);
    const RopeLayerConfig &ra = g.ropes[static_cast<size_t>(a.rope)], &rb = h.ropes[static_cast<size_t>(b.rope)];
    EXPECT_EQ(ra.head_dim, rb.head_dim) << "layer " << l;
    EXPECT_EQ(ra.n_rot, rb.n_rot) << "layer " << l;
    EXPECT_DOUBLE_EQ(ra.rope.theta, rb.rope.theta) << "layer " << l;
  }
}

TEST_P(Gemma4Gguf, LlamaCppFloatGgufRunsAsTheHfDirectory) {
  const std::string fx = GetParam();
  const std::string path = at(fx, "llamacpp-float.gguf");
  {  // the file is in llama.cpp's layout, not ours
    const auto f = gguf::File::open(path);
    EXPECT_EQ(f.find("general.architecture")->s, "gemma4");
    EXPECT_NE(f.find("gemma4.attention.sliding_window_pattern"), nullptr);
    EXPECT_EQ(f.find("gemma4.attention.key_length_global"), nullptr);
    EXPECT_EQ(f.find("gemma4.rope.dimension_count_global"), nullptr);
    EXPECT_NE(f.find_tensor("rope_freqs.weight"), nullptr);
    EXPECT_EQ(f.find_tensor("blk.2.attn_v.weight") == nullptr, fx != "gemma4-e2b");  // K = V on the global layer (not E2B's)
    if (fx == "gemma4-moe") {
      EXPECT_NE(f.find_tensor("blk.0.ffn_gate_up_exps.weight"), nullptr);
      EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_exps.weight"), nullptr);
    }
  }
  const ArchOracle o("", fixture_path(fx));
  auto ck_g = Checkpoint::open(path), ck_h = Checkpoint::open(at(fx, "float"));
  for (Mode mode : {Mode::f32, Mode::a16q8, Mode::w4a4}) {
    SCOPED_TRACE(mode_name(mode));
    auto mg = load_in(*ck_g, mode), mh = load_in(*ck_h, mode);
    expect_same_layers(mg->config(), mh->config());
    for (size_t p = 0; p < o.prompts(); ++p)
      EXPECT_TRUE(eval_all(*mg, o.ids(p), pool_, 160) == eval_all(*mh, o.ids(p), pool_, 160)) << "prompt " << p;
    if (mode != Mode::f32) continue;
    Diff d;
    against_stepped(o, *mg, "float", pool_, d);
    std::printf("%s: llama.cpp's float GGUF, f32 vs transformers: max |diff| %.3g (|logit| <= %.3g)\n", fx.c_str(), d.max_abs, d.max_ref);
    EXPECT_LE(d.max_abs, kF32Bound);
    EXPECT_EQ(d.argmax_differ, 0);
    EXPECT_GT(d.max_ref, 0.5);
  }
}

TEST_P(Gemma4Gguf, LlamaCppNvfp4RepackRunsAsModelOptsDirectory) {
  const std::string fx = GetParam();
  const std::string path = at(fx, "llamacpp-modelopt-nvfp4.gguf");
  if (!exists(path)) GTEST_SKIP() << fx << ": llama.cpp's converter did not convert modelopt-nvfp4 (its record says why)";
  const ArchOracle o("", fixture_path(fx));
  auto ck_g = Checkpoint::open(path), ck_h = Checkpoint::open(at(fx, "modelopt-nvfp4"));
  int nvfp4 = 0;
  for (const TensorEntry& e : ck_g->tensors()) nvfp4 += e.storage == Storage::nvfp4;
  EXPECT_GT(nvfp4, 10);
  for (Mode mode : {Mode::a16q8, Mode::w4a4, Mode::f32}) {
    SCOPED_TRACE(mode_name(mode));
    auto mg = load_in(*ck_g, mode), mh = load_in(*ck_h, mode);
    expect_same_layers(mg->config(), mh->config());
    for (size_t p = 0; p < o.prompts(); ++p)
      EXPECT_TRUE(eval_all(*mg, o.ids(p), pool_, 160) == eval_all(*mh, o.ids(p), pool_, 160)) << "prompt " << p;
  }
}

// A key of llama.cpp's gemma4 loader per layer (a scalar stands for every layer).
std::vector<double> per_layer(const gguf::File& f, const std::string& key, int64_t n_layer) {
  const gguf::Value* v = f.find(key);
  if (!v) return {};
  std::vector<double> out;
  for (int64_t l = 0; l < n_layer; ++l) {
    if (v->type == gguf::ValueType::array && static_cast<size_t>(l) >= v->arr.size()) break;
    const gguf::Value x = v->type != gguf::ValueType::array ? *v : v->arr.at(static_cast<size_t>(l), key);
    out.push_back(x.type == gguf::ValueType::boolean ? (x.as_bool(key) ? 1.0 : 0.0)
                  : x.type == gguf::ValueType::string ? static_cast<double>(x.s.size())
                                                       : x.as_float(key));
  }
  return out;
}

void expect_same_keys(const gguf::File& theirs, const gguf::File& ours) {
  const std::string a = "gemma4.";
  const int64_t n_layer = theirs.find(a + "block_count")->as_int();
  for (const auto& [k, v] : theirs.metadata()) {
    if (k.rfind(a, 0) != 0) continue;
    SCOPED_TRACE(k);
    ASSERT_NE(ours.find(k), nullptr) << k << " is in llama.cpp's file, not in ours";
    EXPECT_EQ(per_layer(theirs, k, n_layer), per_layer(ours, k, n_layer)) << k;
  }
  for (const char* k : {"attention.key_length_global", "attention.head_count_kv_global", "attention.k_eq_v", "rope.dimension_count_global",
                        "attention.sliding_window_swa", "feed_forward_double_wide"})
    EXPECT_EQ(ours.find(a + k), nullptr) << a + k << ": a key of our own in llama.cpp's layout";
}

TEST_P(Gemma4Gguf, OurConvertWritesLlamaCppsLayoutAndRunsAsTheHfDirectory) {
  const std::string fx = GetParam();
  ScratchDir tmp;
  const std::string ours = tmp.path + "/ours.gguf";
  ConvertOptions opt;
  opt.verify = true;
  opt.keep = {"*"};
  opt.head = "f16";  // bf16 kept as it is, as llama.cpp's --outtype bf16
  convert(at(fx, "float"), ours, opt);
  const auto theirs = gguf::File::open(at(fx, "llamacpp-float.gguf")), mine = gguf::File::open(ours);
  EXPECT_EQ(mine.find("general.architecture")->s, "gemma4");
  expect_same_keys(theirs, mine);
  expect_llamacpp_tensors(theirs, mine);
  const ArchOracle o("", fixture_path(fx));
  auto ck_hf = Checkpoint::open(at(fx, "float")), ck_gguf = Checkpoint::open(ours);
  for (Mode mode : {Mode::f32, Mode::a16q8}) {
    auto mh = load_in(*ck_hf, mode), mg = load_in(*ck_gguf, mode);
    for (size_t p = 0; p < o.prompts(); ++p)
      EXPECT_TRUE(eval_all(*mh, o.ids(p), pool_, 160) == eval_all(*mg, o.ids(p), pool_, 160)) << mode_name(mode) << " prompt " << p;
  }
  // llama-cpp-python ran our file to the greedy tokens of its own file (tools/hybrid_llamacpp.py;
  // the E2B-like fixture's llama.cpp aborts on its own file: its KV cache finds no layer for the
  // global layer that shares layer 2's keys, GGML_ASSERT in llama-kv-cache.cpp, recorded there).
  {
    std::ifstream f(at(fx, "llamacpp_greedy.json"));
    const auto j = nlohmann::json::parse(f);
    if (fx != "gemma4-e2b") {
      ASSERT_TRUE(j["ours-float"]["ok"].get<bool>()) << j["ours-float"].dump().substr(0, 400);
      ASSERT_TRUE(j["float"]["ok"].get<bool>()) << j["float"].dump().substr(0, 400);
      EXPECT_EQ(j["ours-float"]["greedy"], j["float"]["greedy"]);
    } else {
      EXPECT_FALSE(j["float"]["ok"].get<bool>()) << "llama.cpp runs the KV-shared fixture now: check its tokens here";
    }
  }
  // llama.cpp's file converted by ours (GGUF in, GGUF out): the same tensors and keys.
  const std::string again = tmp.path + "/again.gguf";
  convert(at(fx, "llamacpp-float.gguf"), again, opt);
  const auto twice = gguf::File::open(again);
  expect_same_keys(theirs, twice);
  expect_llamacpp_tensors(theirs, twice);
}

TEST(Gemma4GgufNvfp4, OurConvertKeepsModelOptsBytesInLlamaCppsLayout) {
  ScratchDir tmp;
  const std::string ours = tmp.path + "/ours.gguf";
  ConvertOptions opt;
  opt.verify = true;
  opt.head = "f16";  // the head and embedding kept bf16, as llama.cpp's conversion does
  const ConvertReport rep = convert(at("gemma4", "modelopt-nvfp4"), ours, opt);
  EXPECT_GT(rep.repacked, 0u);
  const auto mine = gguf::File::open(ours);
  EXPECT_EQ(mine.find_tensor("blk.0.attn_q.weight")->type, ggml::NVFP4);
  const auto theirs = gguf::File::open(at("gemma4", "llamacpp-modelopt-nvfp4.gguf"));
  int same = 0;
  for (const auto& t : theirs.tensors()) {
    if (t.type != ggml::NVFP4 && t.name.find("scale") == std::string::npos) continue;
    const gguf::TensorInfo* m = mine.find_tensor(t.name);
    ASSERT_NE(m, nullptr) << t.name << " is in llama.cpp's file, not in ours";
    EXPECT_EQ(t.ne, m->ne) << t.name;
    EXPECT_EQ(t.type, m->type) << t.name;
    ASSERT_EQ(t.nbytes, m->nbytes) << t.name;
    EXPECT_EQ(std::memcmp(t.data, m->data, static_cast<size_t>(t.nbytes)), 0) << t.name;
    ++same;
  }
  EXPECT_GT(same, 10);
  ThreadPool pool(2);
  const ArchOracle o("", fixture_path("gemma4"));
  auto ck_hf = Checkpoint::open(at("gemma4", "modelopt-nvfp4")), ck_gguf = Checkpoint::open(ours);
  for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
    auto mh = load_in(*ck_hf, mode), mg = load_in(*ck_gguf, mode);
    for (size_t p = 0; p < o.prompts(); ++p)
      EXPECT_TRUE(eval_all(*mh, o.ids(p), pool, 160) == eval_all(*mg, o.ids(p), pool, 160)) << mode_name(mode) << " prompt " << p;
  }
}

// Experts quantized by our convert in llama.cpp's layout: gate and up NVFP4, apart, the down experts (32 wide: no ggml block) float with the router's per-expert scale
// in ffn_down_exps.scale; read back, in a16q8 within quantization noise of the HF directory.
TEST(Gemma4GgufNvfp4, QuantizedExpertsInLlamaCppsLayout) {
  ScratchDir tmp;
  const std::string out = tmp.path + "/moe.gguf";
  convert(at("gemma4-moe", "float"), out, ConvertOptions{});
  const auto f = gguf::File::open(out);
  // NVFP4 gate and up apart (llama.cpp reads no tensor scale for its stacked ffn_gate_up_exps)
  EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_up_exps.weight"), nullptr);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_exps.weight")->type, ggml::NVFP4);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_up_exps.weight")->type, ggml::NVFP4);
  EXPECT_NE(f.find_tensor("blk.0.ffn_gate_exps.scale"), nullptr);
  EXPECT_NE(f.find_tensor("blk.0.ffn_down_exps.weight")->type, ggml::NVFP4);
  EXPECT_NE(f.find_tensor("blk.0.ffn_down_exps.scale"), nullptr);  // the router's per-expert scale
  ThreadPool pool(2);
  const ArchOracle o("", fixture_path("gemma4-moe"));
  auto m = load_in(*Checkpoint::open(out), Mode::a16q8);
  Diff d, at_load;
  against_stepped(o, *m, "float", pool, d);
  {  // the same weights quantized at load from the HF directory (gate and up each their own tensor scale)
    LoadOptions lo;
    lo.mode = Mode::a16q8;
    lo.quantize = true;
    auto mh = Model::load(*Checkpoint::open(at("gemma4-moe", "float")), lo);
    against_stepped(o, *mh, "float", pool, at_load);
  }
  std::printf("gemma4-moe a16q8 vs transformers' float: experts quantized in llama.cpp's layout median %.3g (max %.3g), "
              "quantized at load median %.3g (max %.3g)\n", d.median(), d.max_abs, at_load.median(), at_load.max_abs);
  EXPECT_LT(d.median(), 1.5 * at_load.median());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Gemma4Gguf, ::testing::Values("gemma4", "gemma4-e2b", "gemma4-moe"),
                         [](const auto& i) { return i.param == "gemma4" ? std::string("gemma4") : i.param.substr(7); });

// llama.cpp's gemma4 file rewritten with one edit: metadata `key` set to `v` (null: removed), or
// rope_freqs.weight's last factor set to `last_freq` (when not 0).
std::string edited(const ScratchDir& tmp, const std::string& key, const gguf::Value* v, float last_freq = 0.0f) {
  const auto f = gguf::File::open(at("gemma4", "llamacpp-float.gguf"));
  gguf::Writer w;
  for (const auto& [k, val] : f.metadata()) w.set(k, val);
  if (!key.empty()) {
    if (v) w.set(key, *v);
    else w.remove(key);
  }
  static std::vector<uint8_t> freqs;  // kept alive until serialize()
  for (const auto& t : f.tensors()) {
    if (last_freq != 0.0f && t.name == "rope_freqs.weight") {
      freqs.assign(t.data, t.data + t.nbytes);
      std::memcpy(freqs.data() + freqs.size() - 4, &last_freq, 4);
      w.add_tensor(t.name, t.ne, t.type, freqs.data(), freqs.size());
    } else {
      w.add_tensor(t.name, t.ne, t.type, t.data, static_cast<uint64_t>(t.nbytes));
    }
  }
  const std::string path = tmp.path + "/edited.gguf";
  write_bytes(path, w.serialize());
  return path;
}


TEST(Gemma4GgufBadInput, RefusedNamingTheKeyOrTensor) {
  ScratchDir tmp;
  {  // sliding layers of two KV head counts: this engine has one per layer type
    const gguf::Value kv = gguf::u32_array_value({2, 1, 1, 2, 2, 1});
    const Error e = refused([&] { Checkpoint::open(edited(tmp, "gemma4.attention.head_count_kv", &kv)); });
    EXPECT_EQ(e.tensor(), "gemma4.attention.head_count_kv") << e.what();
    EXPECT_NE(e.found().find("layer 1"), std::string::npos) << e.what();
  }
  {  // a per-layer array shorter than the layers
    const gguf::Value kv = gguf::u32_array_value({2, 2, 1});
    const Error e = refused([&] { Checkpoint::open(edited(tmp, "gemma4.attention.head_count_kv", &kv)); });
    EXPECT_EQ(e.tensor(), "gemma4.attention.head_count_kv") << e.what();
  }
  {  // no sliding-window pattern: the layer types unknown
    const Error e = refused([&] { Checkpoint::open(edited(tmp, "gemma4.attention.sliding_window_pattern", nullptr)); });
    EXPECT_EQ(e.tensor(), "gemma4.attention.sliding_window_pattern") << e.what();
  }
  {  // a rope factor neither 1 nor "not rotated": not proportional RoPE
    const Error e = refused([&] { Checkpoint::open(edited(tmp, "", nullptr, 0.5f)); });
    EXPECT_EQ(e.tensor(), "rope_freqs.weight") << e.what();
  }
}

}  // namespace

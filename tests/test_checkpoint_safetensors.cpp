// The safetensors checkpoint families (fixtures by tools/gen_hf_fixtures.py, weights quantized by
// NVIDIA ModelOpt's NVFP4QTensor): recognition, canonical names with llama.cpp's q/k permutation,
// ModelOpt == compressed-tensors, FP8 dequantization, and one test per SPEC section 6 rule on
// variants written into a scratch directory.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "io_test_util.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/model.h"
#include "nvfp4/error.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/verify.h"
#include "test_util.h"

using namespace nvfp4;
namespace st = nvfp4::safetensors;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

std::string hf(const std::string& d) { return test::fixture_path("hf/" + d); }

Json expected() {
  std::ifstream f(hf("hf.expected.json"));
  return Json::parse(f);
}

Json read_json(const fs::path& p) {
  std::ifstream f(p);
  return Json::parse(f);
}

// A fixture directory loaded into memory, changed, and written to a scratch directory.
struct Variant {
  struct T {
    st::Dtype dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::map<std::string, T> t;
  Json config, hfq;
  explicit Variant(const std::string& fixture) {
    for (const auto& e : fs::directory_iterator(hf(fixture))) {
      const std::string p = e.path().string();
      if (p.size() > 12 && p.substr(p.size() - 12) == ".safetensors") {
        const auto f = st::File::open(p);
        for (const auto& x : f.tensors()) t[x.name] = {x.dtype, x.shape, std::vector<uint8_t>(x.data, x.data + x.nbytes())};
      }
    }
    config = read_json(hf(fixture) + "/config.json");
    if (fs::exists(hf(fixture) + "/hf_quant_config.json")) hfq = read_json(hf(fixture) + "/hf_quant_config.json");
  }
  void set_f32(const std::string& name, std::vector<int64_t> shape, std::vector<float> v) {
    T x{st::Dtype::F32, std::move(shape), std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(x.bytes.data(), v.data(), x.bytes.size());
    t[name] = x;
  }
  std::string write(const test::ScratchDir& d, const std::string& name) const {
    const std::string dir = d / name;
    fs::create_directories(dir);
    std::vector<st::WriteTensor> w;
    for (const auto& [n, x] : t) w.push_back({n, x.dtype, x.shape, x.bytes.data(), x.bytes.size()});
    st::write(dir + "/model.safetensors", w);
    std::ofstream(dir + "/config.json") << config.dump();
    if (!hfq.is_null()) std::ofstream(dir + "/hf_quant_config.json") << hfq.dump();
    return dir;
  }
};

// The rule of the error opening `dir` raises ("" when accepted).
std::string rule(const std::string& dir, std::string* tensor = nullptr) {
  try {
    Checkpoint::open(dir);
  } catch (const Error& e) {
    if (tensor) *tensor = e.tensor();
    EXPECT_FALSE(e.file().empty());
    return e.rule();
  }
  return "";
}

const std::string Q = "model.layers.0.self_attn.q_proj";
const std::string UP = "model.layers.0.mlp.up_proj";

struct ScratchTree : test::ScratchDir {
  ~ScratchTree() { fs::remove_all(path); }
};

}  // namespace

TEST(CheckpointSafetensors, ModelOptShardedDirWithPermutedQk) {
  const auto ck = Checkpoint::open(hf("modelopt"));
  EXPECT_EQ(ck->info().container, "safetensors");
  EXPECT_EQ(ck->info().producer, "modelopt");
  EXPECT_EQ(ck->info().algorithm, "NVFP4");
  EXPECT_TRUE(ck->info().has_input_scales);
  EXPECT_EQ(ck->meta("general.architecture")->as_string(), "llama");
  EXPECT_EQ(ck->meta("llama.attention.head_count_kv")->as_int(), 2);
  for (const char* n : {"token_embd.weight", "output.weight", "output_norm.weight", "blk.0.attn_norm.weight",
                        "blk.0.ffn_norm.weight", "blk.0.attn_output.weight", "blk.0.ffn_gate.weight"}) {
    EXPECT_NE(ck->find(n), nullptr) << n;
  }
  EXPECT_EQ(ck->tensor("output.weight").storage, Storage::bf16);  // lm_head excluded
  const auto ex = expected();
  for (const auto& [hfname, canon] : {std::pair<std::string, std::string>{Q, "blk.0.attn_q.weight"},
                                      {"model.layers.0.self_attn.k_proj", "blk.0.attn_k.weight"}}) {
    const RowMatrix m = ck->nvfp4(canon);
    EXPECT_EQ(m.codes, ex["q"][hfname]["codes"].get<std::vector<uint8_t>>()) << canon;
    EXPECT_EQ(m.scales, ex["q"][hfname]["scales"].get<std::vector<uint8_t>>()) << canon;
    EXPECT_EQ(m.scale2, ex["scale2"][hfname].get<float>());
  }
  EXPECT_EQ(ck->tensor("blk.0.attn_k.weight").shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(ck->tensor("blk.0.ffn_up.weight").input_scale, 0.0078125f);
}

// nvfp4_view (the loader's zero-copy read) shows every NVFP4 tensor as nvfp4() copies it: the
// q/k rows in the permuted order, the CSF-decoded or stored scales, the tensor scale.
TEST(CheckpointSafetensors, Nvfp4ViewEqualsTheCopy) {
  int viewed = 0, permuted = 0;
  for (const char* d : {"modelopt", "ct"}) {
    const auto ck = Checkpoint::open(hf(d));
    for (const TensorEntry& e : ck->tensors()) {
      if (e.storage != Storage::nvfp4) continue;
      const RowMatrix m = ck->nvfp4(e.name);
      RowView v;
      std::vector<int64_t> rows;
      ASSERT_TRUE(ck->nvfp4_view(e.name, v, rows)) << e.name;
      ASSERT_EQ(v.n_out, m.n_out);
      ASSERT_EQ(v.n_in, m.n_in);
      EXPECT_EQ(v.scale2, m.scale2);
      const RowView c = m.view();
      for (int64_t r = 0; r < m.n_out; ++r) {
        ASSERT_TRUE(std::equal(c.row_codes(r), c.row_codes(r) + c.code_row_bytes(), v.row_codes(r))) << e.name << " row " << r;
        ASSERT_TRUE(std::equal(c.row_scales(r), c.row_scales(r) + c.scale_row_bytes(), v.row_scales(r))) << e.name << " row " << r;
      }
      ++viewed;
      permuted += !rows.empty();
    }
  }
  EXPECT_GT(viewed, 0);
  EXPECT_GT(permuted, 0);  // the q/k permutation is exercised
  RowView v;
  std::vector<int64_t> rows;
  EXPECT_FALSE(Checkpoint::open(hf("float"))->nvfp4_view("blk.0.attn_q.weight", v, rows));
}

TEST(CheckpointSafetensors, CompressedTensorsEqualsModelOpt) {
  const auto ck = Checkpoint::open(hf("ct"));
  EXPECT_EQ(ck->info().producer, "compressed-tensors");
  EXPECT_EQ(ck->tensor("blk.0.ffn_down.weight").scale2, expected()["scale2"]["model.layers.0.mlp.down_proj"].get<float>());
  const auto r = verify_checkpoints(hf("modelopt"), hf("ct"));
  EXPECT_TRUE(r.same) << r.difference;
  EXPECT_EQ(r.tensors, 7);
}

TEST(CheckpointSafetensors, MixedPrecisionFp8LayersDequantized) {
  const auto ck = Checkpoint::open(hf("mixed"));
  EXPECT_EQ(ck->info().algorithm, "MIXED_PRECISION");
  EXPECT_FALSE(ck->info().has_input_scales);
  const auto ex = expected()["fp8"];
  for (const auto& [hfname, canon] : {std::pair<std::string, std::string>{Q, "blk.0.attn_q.weight"},
                                      {"model.layers.0.self_attn.k_proj", "blk.0.attn_k.weight"},
                                      {"model.layers.0.self_attn.o_proj", "blk.0.attn_output.weight"}}) {
    EXPECT_EQ(ck->tensor(canon).storage, Storage::fp8);
    EXPECT_EQ(ck->to_f32(canon), ex[hfname].get<std::vector<float>>()) << canon;
  }
  EXPECT_EQ(ck->tensor("blk.0.ffn_up.weight").storage, Storage::nvfp4);
  EXPECT_EQ(ck->tensor("blk.0.ffn_up.weight").input_scale, 0.0f);
}

// FP8 attention beside NVFP4 MLPs, as NVIDIA ships its mixed checkpoints: the model's description
// (printed by run, serve and bench model before the first token) found its NVFP4 kernel through
// the q projection alone and dereferenced null here.
TEST(CheckpointSafetensors, MixedPrecisionModelDescribesItsKernels) {
  const auto ck = Checkpoint::open(hf("mixed"));
  const auto m = Model::load(*ck, LoadOptions{});
  const auto lines = m->describe();
  ASSERT_GE(lines.size(), 2u);
  // a16q8: the BF16 layers in the pinned order, the FP8 ones integer-exact, each kernel named.
  EXPECT_NE(lines[1].find("linear layers: 3 NVFP4, 0 float (f32), 2 float in the pinned order"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(", 2 FP8 integer-exact"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("NVFP4 mode a16q8, kernels "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("FP8 kernel fp8_q8_"), std::string::npos) << lines[1];
  // f32: all four through the float kernel.
  LoadOptions lo;
  lo.mode = Mode::f32;
  const auto lf = Model::load(*ck, lo)->describe();
  EXPECT_NE(lf[1].find("linear layers: 3 NVFP4, 4 float (f32) of which 2 FP8"), std::string::npos) << lf[1];
  EXPECT_NE(lf[1].find("float kernel "), std::string::npos) << lf[1];
}

TEST(CheckpointSafetensors, FloatCheckpointAndSingleFile) {
  const auto ck = Checkpoint::open(hf("float/model.safetensors"));  // config.json found beside it
  EXPECT_EQ(ck->info().algorithm, "float");
  EXPECT_EQ(ck->tensor("blk.0.attn_q.weight").storage, Storage::bf16);
  DType dt;
  const void* p = nullptr;
  EXPECT_FALSE(ck->raw_float("blk.0.attn_q.weight", dt, p));  // permuted: no zero-copy view
  EXPECT_TRUE(ck->raw_float("blk.0.attn_v.weight", dt, p));
  EXPECT_EQ(dt, DType::bf16);
}

TEST(CheckpointSafetensors, ForgetMetaForgetsOneKey) {
  const auto ck = Checkpoint::open(hf("float"));
  const size_t keys = ck->meta_keys().size();
  ASSERT_NE(ck->meta("general.architecture"), nullptr);
  const std::string last = ck->meta_keys().back();
  ck->forget_meta(last);
  EXPECT_EQ(ck->meta(last), nullptr);
  EXPECT_EQ(ck->meta_keys().size(), keys - 1);
  ck->forget_meta("absent.key");
  EXPECT_EQ(ck->meta_keys().size(), keys - 1);
  EXPECT_NE(ck->meta("general.architecture"), nullptr);
}

TEST(CheckpointSafetensors, EveryLoadingRuleRefuses) {
  ScratchTree d;
  auto check = [&](const Variant& v, const std::string& name, const std::string& want, const std::string& want_tensor = "*") {
    std::string tensor;
    EXPECT_EQ(rule(v.write(d, name), &tensor), want) << name;
    if (want_tensor != "*") {
      EXPECT_EQ(tensor, want_tensor) << name;
    }
  };
  const Variant base("ct");
  EXPECT_EQ(rule(base.write(d, "ok")), "");
  const Variant mo("mixed");
  EXPECT_EQ(rule(mo.write(d, "ok_mixed")), "");
  { Variant v = base; v.t.erase(UP + ".weight_scale"); check(v, "no_block_scale", "NVFP4 weight without its block scale", UP + ".weight_packed"); }
  { Variant v = base; v.t.erase(UP + ".weight_global_scale"); check(v, "no_tensor_scale", "NVFP4 weight without its tensor scale"); }
  { Variant v = base; v.t[UP + ".weight_scale"].dtype = st::Dtype::U8; check(v, "scale_dtype", "NVFP4 block scale must be F8_E4M3"); }
  { Variant v = base; v.t[UP + ".weight_scale"].shape = {64, 8}; check(v, "scale_shape", "NVFP4 block scale has the wrong shape"); }
  { Variant v = base; v.t[UP + ".weight_scale"].bytes[5] = 0x7F; check(v, "scale_nan", "block scale byte is NaN", UP + ".weight_scale"); }
  { Variant v = base; v.t[UP + ".weight_scale"].bytes[5] |= 0x80; check(v, "scale_sign", "block scale byte has its sign bit set"); }
  { Variant v = base; v.set_f32(UP + ".weight_global_scale", {1}, {0.0f}); check(v, "global_zero", "tensor scale must be finite and positive"); }
  { Variant v = base; v.set_f32(UP + ".weight_global_scale", {1}, {NAN}); check(v, "global_nan", "tensor scale must be finite and positive"); }
  { Variant v = base; v.set_f32(UP + ".weight_global_scale", {2}, {1.0f, 1.0f}); check(v, "global_shape", "NVFP4 tensor scale must be one F32 value"); }
  { Variant v = base;  // n_in = 8: codes [128][4], scales [128][0]
    v.t[UP + ".weight_packed"] = {st::Dtype::U8, {128, 4}, std::vector<uint8_t>(512, 0x11)};
    check(v, "n_in", "NVFP4 needs n_in to be a multiple of 16"); }
  { Variant v = base; v.config.erase("quantization_config"); check(v, "no_config", "NVFP4 tensors present but the configuration does not say NVFP4 for this layer"); }
  { Variant v = base; v.config["quantization_config"]["ignore"].push_back(UP);  // compressed-tensors: exact names or re:, no wildcards
    check(v, "ignored_but_nvfp4", "NVFP4 tensors present but the configuration does not say NVFP4 for this layer"); }
  { Variant v = base; v.config["quantization_config"]["ignore"].push_back("re:model[.]layers[.][0-9]+[.]mlp[.]up_proj");
    check(v, "ignored_by_regex", "NVFP4 tensors present but the configuration does not say NVFP4 for this layer", UP + ".weight_packed"); }
  { Variant v("float"); v.hfq = {{"quantization", {{"quant_algo", "NVFP4"}}}}; check(v, "says_nvfp4_none", "the configuration says NVFP4 but no NVFP4 tensor exists"); }
  { Variant v = base; v.config["quantization_config"]["config_groups"]["group_0"]["input_activations"] = nullptr;
    check(v, "input_without_w4a4", "input scale present but the configuration does not declare W4A4 activations"); }
  { Variant v = base; v.t.erase(UP + ".input_global_scale"); check(v, "w4a4_without_input", "W4A4 declared (FP4 input_activations) but the layer has no input scale"); }
  { Variant v = mo; v.hfq["quantization"]["quantized_layers"][UP]["quant_algo"] = "NVFP4"; check(v, "mo_w4a4_without_input", "W4A4 declared (quant_algo NVFP4) but the layer has no input scale"); }
  { Variant v = mo; v.hfq["quantization"]["quantized_layers"][UP]["quant_algo"] = "NVFP4_AWQ";  // scale folded into the norm
    EXPECT_EQ(rule(v.write(d, "awq_without_pqs")), "");
    EXPECT_TRUE(Checkpoint::open(d / "awq_without_pqs")->pre_quant_scale("blk.0.ffn_up.weight").empty()); }
  { Variant v = mo; v.set_f32(UP + ".pre_quant_scale", {64}, std::vector<float>(64, 1.0f)); check(v, "pqs_not_awq", "pre_quant_scale present but the layer is not NVFP4_AWQ"); }
  { Variant v = mo; v.hfq["quantization"]["quantized_layers"][UP]["quant_algo"] = "NVFP4_AWQ";
    v.set_f32(UP + ".pre_quant_scale", {64}, std::vector<float>(64, 1.0f));
    EXPECT_EQ(rule(v.write(d, "awq_ok")), "");
    EXPECT_EQ(Checkpoint::open(d / "awq_ok")->pre_quant_scale("blk.0.ffn_up.weight").size(), 64u); }
  { Variant v = mo; v.hfq["quantization"]["quant_algo"] = "INT4_AWQ"; v.hfq["quantization"].erase("quantized_layers");
    check(v, "int4", "unsupported ModelOpt quant_algo"); }
  { Variant v = base; v.config["quantization_config"]["quant_method"] = "gptq"; check(v, "gptq", "unsupported quantization method"); }
  { Variant v = base; v.config["quantization_config"]["config_groups"]["group_0"]["weights"]["num_bits"] = 8;
    v.config["quantization_config"]["config_groups"]["group_0"]["weights"]["type"] = "int";
    check(v, "int8", "unsupported compressed-tensors weight format"); }
  { Variant v = mo; v.t.erase(Q + ".weight_scale"); check(v, "fp8_no_scale", "FP8 weight without its scale"); }
  { Variant v = mo; v.set_f32(Q + ".weight_scale", {3}, {1, 1, 1}); check(v, "fp8_scale_shape", "FP8 weight scale must be per tensor or per output channel"); }
  { Variant v = mo; v.hfq["quantization"]["quantized_layers"].erase(Q); check(v, "fp8_undeclared", "FP8 weight in a layer the configuration does not declare FP8"); }
  { Variant v = base; v.t["model.layers.0.odd"] = {st::Dtype::I32, {2}, std::vector<uint8_t>(8)}; check(v, "odd_dtype", "tensor of a form this project does not read"); }
}

TEST(CheckpointSafetensors, ShardingAndIndexRules) {
  ScratchTree d;
  fs::copy(hf("modelopt"), d / "m");
  EXPECT_EQ(rule(d / "m"), "");
  fs::remove(d / "m/model-00002-of-00002.safetensors");
  EXPECT_EQ(rule(d / "m"), "shard listed in the index is missing");
  fs::copy(hf("modelopt"), d / "n");
  Json idx = read_json(d / "n/model.safetensors.index.json");
  idx["weight_map"]["extra.weight"] = "model-00001-of-00002.safetensors";
  std::ofstream(d / "n/model.safetensors.index.json") << idx.dump();
  EXPECT_EQ(rule(d / "n"), "tensor listed in the index is missing");
  fs::create_directories(d / "empty");
  EXPECT_EQ(rule(d / "empty"), "directory holds no checkpoint");
}

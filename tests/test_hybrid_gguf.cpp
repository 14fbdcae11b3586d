// The Gated DeltaNet hybrids in llama.cpp's GGUF layout (io/hybrid_layout.h), both ways, on the
// committed fixtures (tools/hybrid_llamacpp.py made them with llama.cpp's own converter and ran
// them with llama-cpp-python; CI has neither):
//  - llama.cpp's conversion of fixtures/hybrid/<arch>/float (llamacpp-float.gguf: value heads
//    tiled, A as -exp(A_log), norms with their 1, post_attention_norm) runs in our f32 mode within
//    5e-5 of transformers, greedy-equal to the tokens llama.cpp produced on it;
//  - our `convert` of the HF directory writes llama.cpp's names, shapes, types and bytes (the same
//    tensors as llama.cpp's file), and our GGUF runs to the same logits as the HF directory: f32,
//    a16q8 and w4a4 bit for bit (the exact A_log travels in a key llama.cpp ignores);
//  - llama.cpp's NVFP4 repack of ModelOpt's export (qwen3_5: the MoE experts' width 32 is no
//    multiple of ggml's 64) holds our bytes and runs to the same bits as the export.
#include <bit>
#include <cmath>
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

std::string root() { return fixture_path("hybrid"); }
std::string at(const std::string& arch, const std::string& what) { return root() + "/" + arch + "/" + what; }

nlohmann::json greedy_record(const std::string& arch) {
  std::ifstream f(at(arch, "llamacpp_greedy.json"));
  return nlohmann::json::parse(f);
}

class HybridGguf : public ::testing::TestWithParam<std::string> {
 protected:
  ThreadPool pool_{2};
};

TEST_P(HybridGguf, LlamaCppFloatGgufRunsAsTransformers) {
  const std::string arch = GetParam();
  const std::string path = at(arch, "llamacpp-float.gguf");
  {  // the file is in llama.cpp's layout, not ours
    const auto f = gguf::File::open(path);
    EXPECT_NE(f.find_tensor("blk.0.ssm_a"), nullptr);
    EXPECT_NE(f.find_tensor("blk.0.post_attention_norm.weight"), nullptr);
    EXPECT_EQ(f.find_tensor("blk.0.ffn_norm.weight"), nullptr);
    EXPECT_EQ(f.find_tensor("blk.0.ssm_in.weight"), nullptr);
    EXPECT_EQ(f.find_tensor("blk.0.ssm_beta.weight") != nullptr, arch != "qwen3_next");
  }
  const ArchOracle o(arch, root());
  auto ck = Checkpoint::open(path);
  auto m = load_in(*ck, Mode::f32);
  EXPECT_EQ(m->config().arch, arch);
  Diff d;
  for (size_t p = 0; p < o.prompts(); ++p) {
    const auto ids = o.ids(p);
    d.add(eval_all(*m, ids, pool_).data(), o.logits(p, "float"), ids.size(), o.nv);
  }
  std::printf("%s llama.cpp's float GGUF, f32 vs transformers: max |diff| %.3g (|logit| <= %.3g)\n", arch.c_str(), d.max_abs, d.max_ref);
  EXPECT_LE(d.max_abs, kF32Bound);
  EXPECT_EQ(d.argmax_differ, 0);
  EXPECT_GT(d.max_ref, 0.5);
  // llama.cpp's own greedy tokens (llamacpp_greedy.json): on its f32 conversion of the same
  // weights ("float-f32", not committed: the bf16 values widened), and on this bf16 file where they
  // agree with transformers' (ggml's BF16 matmul rounds the activations to bf16: qwen3_5_moe's
  // part ways with transformers' after a few tokens).
  const auto j = greedy_record(arch);
  ASSERT_TRUE(j["float-f32"]["ok"].get<bool>()) << j["float-f32"].dump();
  ASSERT_TRUE(j["float"]["ok"].get<bool>()) << j["float"].dump();
  int bf16_checked = 0;
  for (size_t p = 0; p < j["prompts"].size(); ++p) {
    const auto ids = j["prompts"][p].get<std::vector<int32_t>>();
    const size_t n = greedy_agrees(*m, ids, j["float-f32"]["greedy"][p].get<std::vector<int32_t>>(), pool_);
    std::printf("  prompt %zu: llama.cpp's greedy tokens (f32 file) equal for %zu of %d\n", p, n, j["n"].get<int>());
    EXPECT_GE(n, 4u) << "prompt " << p;
    if (j["float"]["agrees_with_transformers_float"][p].get<bool>()) {
      ++bf16_checked;
      EXPECT_GE(greedy_agrees(*m, ids, j["float"]["greedy"][p].get<std::vector<int32_t>>(), pool_), 4u) << "bf16 file, prompt " << p;
    }
  }
  if (arch != "qwen3_5_moe") {
    EXPECT_EQ(bf16_checked, 3);
  }
}

// A release converted by llama.cpp as it converts one (MTP layer kept): the MTP block it appends
// (blk.4, block_count 5, nextn_predict_layers 1) is set aside, the 4 blocks run as transformers.
TEST(HybridGgufRelease, LlamaCppVlmReleaseGgufSetsItsMtpLayerAside) {
  const std::string path = at("qwen3_5", "llamacpp-float-vlm.gguf");
  {
    const auto f = gguf::File::open(path);
    ASSERT_NE(f.find("qwen35.nextn_predict_layers"), nullptr);
    EXPECT_EQ(f.find("qwen35.block_count")->as_int(), 5);
    EXPECT_NE(f.find_tensor("blk.4.nextn.eh_proj.weight"), nullptr);
  }
  auto ck = Checkpoint::open(path);
  ASSERT_EQ(ck->info().set_aside.size(), 1u);
  EXPECT_NE(ck->info().set_aside[0].find("MTP"), std::string::npos) << ck->info().set_aside[0];
  for (const TensorEntry& e : ck->tensors()) EXPECT_EQ(e.name.rfind("blk.4.", 0), std::string::npos) << e.name;
  auto m = load_in(*ck, Mode::f32);
  EXPECT_EQ(m->config().n_layer, 4);
  ThreadPool pool(2);
  const ArchOracle o("qwen3_5", root());
  Diff d;
  for (size_t p = 0; p < o.prompts(); ++p) {
    const auto ids = o.ids(p);
    d.add(eval_all(*m, ids, pool).data(), o.logits(p, "float"), ids.size(), o.nv);
  }
  std::printf("qwen3_5 llama.cpp's release GGUF, f32 vs transformers: max |diff| %.3g\n", d.max_abs);
  EXPECT_LE(d.max_abs, kF32Bound);
  EXPECT_EQ(d.argmax_differ, 0);
}

// The metadata llama.cpp's loader reads for these archs, equal in both files.
void expect_same_keys(const gguf::File& theirs, const gguf::File& ours, const std::string& a) {
  for (const char* k : {"block_count", "embedding_length", "attention.head_count", "attention.head_count_kv", "attention.key_length",
                        "attention.value_length", "ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank",
                        "ssm.inner_size", "full_attention_interval", "rope.dimension_count", "rope.freq_base",
                        "attention.layer_norm_rms_epsilon", "rope.dimension_sections", "expert_count", "expert_used_count",
                        "expert_feed_forward_length", "expert_shared_feed_forward_length"}) {
    const gguf::Value* t = theirs.find(a + k);
    const gguf::Value* o = ours.find(a + k);
    if (!t) {
      EXPECT_EQ(o, nullptr) << a + k;
      continue;
    }
    ASSERT_NE(o, nullptr) << a + k << " is in llama.cpp's file, not in ours";
    if (t->type == gguf::ValueType::array) {
      ASSERT_EQ(o->type, gguf::ValueType::array) << a + k;
      ASSERT_EQ(t->arr.size(), o->arr.size()) << a + k;
      for (size_t i = 0; i < t->arr.size(); ++i) EXPECT_EQ(t->arr.as_int(i), o->arr.as_int(i)) << a + k << "[" << i << "]";
    } else {
      EXPECT_EQ(t->as_float(a + k), o->as_float(a + k)) << a + k;
    }
  }
}

// `form`: the float directory, or the release layout (float-vlm: the text model under
// model.language_model, its vision tower and MTP layer left out), whose text weights are float's.
void our_convert_is_llamacpps(const std::string& arch, const std::string& form, ThreadPool& pool_) {
  SCOPED_TRACE(form);
  ScratchDir tmp;
  const std::string ours = tmp.path + "/ours.gguf";
  ConvertOptions opt;
  opt.verify = true;
  opt.keep = {"*"};
  opt.head = "f16";  // bf16 kept as it is, as llama.cpp's --outtype bf16
  convert(at(arch, form), ours, opt);
  const auto theirs = gguf::File::open(at(arch, "llamacpp-float.gguf")), mine = gguf::File::open(ours);
  const gguf::Value* ga = theirs.find("general.architecture");
  ASSERT_NE(ga, nullptr);
  const std::string a = ga->s + ".";
  EXPECT_EQ(mine.find("general.architecture")->s, ga->s);
  expect_same_keys(theirs, mine, a);
  const int ssm_a = expect_llamacpp_tensors(theirs, mine);
  EXPECT_EQ(ssm_a, 3);  // the three linear layers
  // Our GGUF runs as the HF directory, bit for bit in f32 (the same float values, the same order).
  const ArchOracle o(arch, root());
  auto ck_hf = Checkpoint::open(at(arch, form)), ck_gguf = Checkpoint::open(ours);
  auto mh = load_in(*ck_hf, Mode::f32), mg = load_in(*ck_gguf, Mode::f32);
  for (size_t p = 0; p < o.prompts(); ++p)
    EXPECT_TRUE(eval_all(*mh, o.ids(p), pool_) == eval_all(*mg, o.ids(p), pool_)) << "f32 prompt " << p;
}

TEST_P(HybridGguf, OurConvertWritesLlamaCppsLayoutAndRunsAsTheHfDirectory) {
  our_convert_is_llamacpps(GetParam(), "float", pool_);
  if (GetParam() != "qwen3_next") our_convert_is_llamacpps(GetParam(), "float-vlm", pool_);
}

INSTANTIATE_TEST_SUITE_P(Hybrid, HybridGguf, ::testing::Values("qwen3_5", "qwen3_5_moe", "qwen3_next"),
                         [](const auto& i) { return i.param; });

// ModelOpt's NVFP4 export of qwen3_5 (every NVFP4 width a multiple of 64): our convert keeps its
// bytes in llama.cpp's layout (value heads tiled, out_proj's column blocks moved), the same bytes
// as llama.cpp's own NVFP4 conversion, and the file runs to the same bits as the export.
TEST(HybridGgufNvfp4, OurConvertKeepsModelOptsBytesInLlamaCppsLayout) {
  const std::string arch = "qwen3_5";
  ScratchDir tmp;
  const std::string ours = tmp.path + "/ours.gguf";
  ConvertOptions opt;
  opt.verify = true;
  opt.head = "f16";  // the head and embedding kept bf16, as the export holds them
  const ConvertReport rep = convert(at(arch, "modelopt-nvfp4"), ours, opt);
  EXPECT_GT(rep.repacked, 0u);
  const auto mine = gguf::File::open(ours);
  EXPECT_EQ(mine.find_tensor("blk.0.ssm_out.weight")->type, ggml::NVFP4);
  EXPECT_EQ(mine.find_tensor("blk.0.attn_qkv.weight")->type, ggml::NVFP4);
  if (exists(at(arch, "llamacpp-modelopt-nvfp4.gguf"))) {
    const auto theirs = gguf::File::open(at(arch, "llamacpp-modelopt-nvfp4.gguf"));
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
  }
  ThreadPool pool(2);
  const ArchOracle o(arch, root());
  auto ck_hf = Checkpoint::open(at(arch, "modelopt-nvfp4")), ck_gguf = Checkpoint::open(ours);
  for (Mode mode : {Mode::a16q8, Mode::w4a4, Mode::f32}) {
    auto mh = load_in(*ck_hf, mode), mg = load_in(*ck_gguf, mode);
    for (size_t p = 0; p < o.prompts(); ++p)
      EXPECT_TRUE(eval_all(*mh, o.ids(p), pool) == eval_all(*mg, o.ids(p), pool)) << mode_name(mode) << " prompt " << p;
  }
}

// llama.cpp's qwen35 file rewritten with one edit: `key` set to `v` (absent: removed), or
// tensor blk.0.ssm_a's first value replaced.
std::string edited(const ScratchDir& tmp, const std::string& key, const gguf::Value* v, const float* ssm_a0 = nullptr) {
  const auto f = gguf::File::open(at("qwen3_5", "llamacpp-float.gguf"));
  gguf::Writer w;
  for (const auto& [k, val] : f.metadata()) w.set(k, val);
  if (!key.empty()) {
    if (v) w.set(key, *v);
    else w.remove(key);
  }
  static std::vector<uint8_t> a;  // kept alive until serialize()
  for (const auto& t : f.tensors()) {
    if (ssm_a0 && t.name == "blk.0.ssm_a") {
      a.assign(t.data, t.data + t.nbytes);
      std::memcpy(a.data(), ssm_a0, 4);
      w.add_tensor(t.name, t.ne, t.type, a.data(), a.size());
    } else {
      w.add_tensor(t.name, t.ne, t.type, t.data, static_cast<uint64_t>(t.nbytes));
    }
  }
  const std::string path = tmp.path + "/edited.gguf";
  write_bytes(path, w.serialize());
  return path;
}

TEST(HybridGgufBadInput, RefusedNamingTheKeyOrTensor) {
  ScratchDir tmp;
  {  // A = -exp(A_log) must be negative
    const float pos = 0.5f;
    const std::string path = edited(tmp, "", nullptr, &pos);
    const Error e = refused([&] { load_in(*Checkpoint::open(path), Mode::f32); });
    EXPECT_EQ(e.tensor(), "blk.0.ssm_a") << e.what();
    EXPECT_EQ(e.found(), std::to_string(pos)) << e.what();
  }
  {  // exact A_log values that are not the file's ssm_a
    gguf::Value x;
    x.type = gguf::ValueType::array;
    x.arr = gguf::Array(gguf::ValueType::f32);
    for (int i = 0; i < 12; ++i) {
      gguf::Value f;
      f.type = gguf::ValueType::f32;
      f.f = 0.25;
      x.arr.push_back(f);
    }
    const std::string path = edited(tmp, "qwen35.ssm.a_log_exact", &x);
    const Error e = refused([&] { Checkpoint::open(path); });
    EXPECT_EQ(e.tensor(), "qwen35.ssm.a_log_exact") << e.what();
    EXPECT_NE(e.rule().find("blk.0.ssm_a"), std::string::npos) << e.what();
  }
  {  // recurrent layers that contradict full_attention_interval
    gguf::Value r;
    r.type = gguf::ValueType::array;
    r.arr = gguf::Array(gguf::ValueType::boolean);
    for (bool b : {true, true, false, false}) {
      gguf::Value e;
      e.type = gguf::ValueType::boolean;
      e.u = b;
      r.arr.push_back(e);
    }
    const std::string path = edited(tmp, "qwen35.attention.recurrent_layers", &r);
    const Error e = refused([&] { load_in(*Checkpoint::open(path), Mode::f32); });
    EXPECT_EQ(e.tensor(), "qwen35.attention.recurrent_layers[2]") << e.what();
  }
  {  // more value heads than the tensors hold: refused before any row is read
    gguf::Value n;
    n.type = gguf::ValueType::u32;
    n.u = 8;
    const std::string path = edited(tmp, "qwen35.ssm.time_step_rank", &n);
    const Error e = refused([&] { Checkpoint::open(path); });
    EXPECT_EQ(e.tensor().rfind("blk.0.", 0), 0u) << e.what();
    EXPECT_EQ(e.expected(), "at least 8 rows") << e.what();
  }
  {  // a hybrid's GGUF as an HF directory (the norms' 1 is not taken back out)
    const Error e = refused([&] { convert(at("qwen3_5", "llamacpp-float.gguf"), tmp.path + "/hf-out", ConvertOptions{}); });
    EXPECT_EQ(e.tensor(), "general.architecture") << e.what();
    EXPECT_EQ(e.found(), "qwen35") << e.what();
  }
  {  // value heads that do not divide among the key heads
    gguf::Value n;
    n.type = gguf::ValueType::u32;
    n.u = 3;
    const std::string path = edited(tmp, "qwen35.ssm.time_step_rank", &n);
    const Error e = refused([&] { Checkpoint::open(path); });
    EXPECT_EQ(e.tensor(), "qwen35.ssm.time_step_rank") << e.what();
    EXPECT_EQ(e.found(), "3") << e.what();
  }
}

}  // namespace

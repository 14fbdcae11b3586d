// Nemotron-H / Nemotron 3 in llama.cpp's GGUF layout (io/nemotron_layout.h), both ways, on the
// committed fixtures fixtures/nemotron_h/{nemotron_h_dense, nemotron3_moe, nemotron3_latent}
// (tools/gen_nemotron_fixtures.py: transformers 5.17's float models in the shapes llama.cpp holds;
// tools/hybrid_llamacpp.py: llama.cpp's own converter and llama-cpp-python; CI has neither):
//  - llama.cpp's conversion of float/ (llamacpp-float.gguf: nemotron_h or nemotron_h_moe, the
//    layer kinds in per-layer arrays, A as -exp(A_log), q/k rows permuted, exp_probs_b,
//    ffn_latent_down/up) runs in our f32 mode within 5e-5 of transformers, greedy-equal to the
//    tokens llama.cpp produced on it;
//  - our `convert` of the HF directory writes llama.cpp's names, shapes, types, bytes and the keys
//    its loader reads, llama-cpp-python ran our file to llama.cpp's own results (recorded in
//    llamacpp_greedy.json, "ours-float"), and our GGUF runs to the same bits as the HF directory;
//  - what llama.cpp's layout cannot hold (an MLP beside MoE layers) is refused by name.
#include <bit>
#include <cmath>
#include <cstring>
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

std::string root() { return fixture_path("nemotron_h"); }
std::string at(const std::string& arch, const std::string& what) { return root() + "/" + arch + "/" + what; }

nlohmann::json greedy_record(const std::string& arch) {
  std::ifstream f(at(arch, "llamacpp_greedy.json"));
  return nlohmann::json::parse(f);
}

std::string pattern_of(const std::string& arch) { return arch == "nemotron_h_dense" ? "M*-M-" : "MEM*ME"; }
std::string gguf_arch_of(const std::string& arch) { return arch == "nemotron_h_dense" ? "nemotron_h" : "nemotron_h_moe"; }

class NemotronGguf : public ::testing::TestWithParam<std::string> {
 protected:
  ThreadPool pool_{2};
};

Diff against_transformers(const Model& m, const ArchOracle& o, ThreadPool& pool) {
  Diff d;
  for (size_t p = 0; p < o.prompts(); ++p) {
    const auto ids = o.ids(p);
    d.add(eval_all(m, ids, pool).data(), o.logits(p, "float"), ids.size(), o.nv);
  }
  return d;
}

TEST_P(NemotronGguf, LlamaCppFloatGgufRunsAsTransformers) {
  const std::string arch = GetParam();
  const std::string path = at(arch, "llamacpp-float.gguf");
  {  // the file is in llama.cpp's layout, not ours
    const auto f = gguf::File::open(path);
    EXPECT_EQ(f.find("general.architecture")->s, gguf_arch_of(arch));
    EXPECT_EQ(f.find(gguf_arch_of(arch) + ".layer_pattern"), nullptr);
    EXPECT_EQ(f.find(gguf_arch_of(arch) + ".attention.head_count_kv")->type, gguf::ValueType::array);
    EXPECT_NE(f.find_tensor("blk.0.ssm_a"), nullptr);
    EXPECT_EQ(f.find_tensor("blk.0.ssm_a_log"), nullptr);
    EXPECT_EQ(f.find_tensor("blk.1.exp_probs_b.bias") != nullptr, arch != "nemotron_h_dense");
    EXPECT_EQ(f.find_tensor("blk.1.ffn_latent_down.weight") != nullptr, arch == "nemotron3_latent");
  }
  const ArchOracle o(arch, root());
  auto ck = Checkpoint::open(path);
  auto m = load_in(*ck, Mode::f32);
  EXPECT_EQ(m->config().arch, "nemotron_h");
  EXPECT_EQ(m->config().pattern, pattern_of(arch));
  EXPECT_EQ(m->config().moe_latent, arch == "nemotron3_latent" ? 32 : 0);
  const Diff d = against_transformers(*m, o, pool_);
  std::printf("%s llama.cpp's float GGUF, f32 vs transformers: max |diff| %.3g (|logit| <= %.3g)\n", arch.c_str(), d.max_abs, d.max_ref);
  EXPECT_LE(d.max_abs, kF32Bound);
  EXPECT_EQ(d.argmax_differ, 0);
  EXPECT_GT(d.max_ref, 0.5);
  {  // the HF directory itself, the same bound
    auto mh = load_in(*Checkpoint::open(at(arch, "float")), Mode::f32);
    const Diff dh = against_transformers(*mh, o, pool_);
    EXPECT_LE(dh.max_abs, kF32Bound);
    EXPECT_EQ(dh.argmax_differ, 0);
  }
  // llama.cpp's own greedy tokens on its f32 conversion of the same weights (not committed) and on
  // this bf16 file where they agree with transformers' (ggml's BF16 matmul rounds activations).
  const auto j = greedy_record(arch);
  ASSERT_TRUE(j["float-f32"]["ok"].get<bool>()) << j["float-f32"].dump();
  ASSERT_TRUE(j["float"]["ok"].get<bool>()) << j["float"].dump();
  for (size_t p = 0; p < j["prompts"].size(); ++p) {
    const auto ids = j["prompts"][p].get<std::vector<int32_t>>();
    const size_t n = greedy_agrees(*m, ids, j["float-f32"]["greedy"][p].get<std::vector<int32_t>>(), pool_);
    std::printf("  prompt %zu: llama.cpp's greedy tokens (f32 file) equal for %zu of %d\n", p, n, j["n"].get<int>());
    EXPECT_GE(n, 4u) << "prompt " << p;
    if (j["float"]["agrees_with_transformers_float"][p].get<bool>()) {
      EXPECT_GE(greedy_agrees(*m, ids, j["float"]["greedy"][p].get<std::vector<int32_t>>(), pool_), 4u) << "bf16 file, prompt " << p;
    }
  }
}

// The keys llama.cpp's nemotron_h loader reads, equal in both files.
void expect_same_keys(const gguf::File& theirs, const gguf::File& ours, const std::string& a) {
  for (const char* k : {"block_count", "embedding_length", "attention.head_count", "attention.head_count_kv", "attention.key_length",
                        "attention.value_length", "feed_forward_length", "attention.layer_norm_epsilon", "ssm.conv_kernel",
                        "ssm.state_size", "ssm.group_count", "ssm.time_step_rank", "ssm.inner_size", "expert_count", "expert_used_count",
                        "expert_feed_forward_length", "expert_shared_feed_forward_length", "expert_shared_count", "expert_weights_norm",
                        "expert_weights_scale", "expert_group_count", "expert_group_used_count", "moe_latent_size", "vocab_size"}) {
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
    } else if (t->type == gguf::ValueType::boolean) {
      EXPECT_EQ(o->type, gguf::ValueType::boolean) << a + k;
      EXPECT_EQ(t->as_bool(), o->as_bool()) << a + k;
    } else {
      EXPECT_EQ(t->as_float(a + k), o->as_float(a + k)) << a + k;
    }
  }
  // Ours has no key of another layout (nemotron_h's layer_pattern) and none under another arch.
  EXPECT_EQ(ours.find(a + "layer_pattern"), nullptr);
  for (const auto& [k, v] : ours.metadata())
    if (k.rfind("nemotron_h", 0) == 0) {
      EXPECT_EQ(k.rfind(a, 0), 0u) << k;
    }
}

TEST_P(NemotronGguf, OurConvertWritesLlamaCppsLayoutAndRunsAsTheHfDirectory) {
  const std::string arch = GetParam();
  ScratchDir tmp;
  const std::string ours = tmp.path + "/ours.gguf";
  ConvertOptions opt;
  opt.verify = true;
  opt.keep = {"*"};
  opt.head = "f16";  // bf16 kept as it is, as llama.cpp's --outtype bf16
  convert(at(arch, "float"), ours, opt);
  const auto theirs = gguf::File::open(at(arch, "llamacpp-float.gguf")), mine = gguf::File::open(ours);
  const std::string ga = theirs.find("general.architecture")->s;
  EXPECT_EQ(mine.find("general.architecture")->s, ga);
  expect_same_keys(theirs, mine, ga + ".");
  const int ssm_a = expect_llamacpp_tensors(theirs, mine);
  EXPECT_EQ(ssm_a, arch == "nemotron_h_dense" ? 2 : 3);  // the Mamba-2 layers
  // llama-cpp-python ran our convert of this directory (tools/hybrid_llamacpp.py) to the same
  // greedy tokens as its own file.
  const auto j = greedy_record(arch);
  ASSERT_TRUE(j["ours-float"]["ok"].get<bool>()) << j["ours-float"].dump();
  EXPECT_EQ(j["ours-float"]["greedy"], j["float"]["greedy"]);
  // Our GGUF runs as the HF directory, bit for bit (the exact A_log travels in a key llama.cpp
  // ignores; the q/k rows come back in HF's order).
  const ArchOracle o(arch, root());
  auto ck_hf = Checkpoint::open(at(arch, "float")), ck_gguf = Checkpoint::open(ours);
  for (Mode mode : {Mode::f32, Mode::a16q8}) {
    auto mh = load_in(*ck_hf, mode), mg = load_in(*ck_gguf, mode);
    for (size_t p = 0; p < o.prompts(); ++p)
      EXPECT_TRUE(eval_all(*mh, o.ids(p), pool_) == eval_all(*mg, o.ids(p), pool_)) << "prompt " << p;
  }
  // ... and our GGUF converted again (GGUF in, GGUF out) is the same file's tensors and keys.
  const std::string again = tmp.path + "/again.gguf";
  convert(ours, again, opt);
  const auto twice = gguf::File::open(again);
  expect_same_keys(mine, twice, ga + ".");
  ASSERT_EQ(twice.tensors().size(), mine.tensors().size());
  for (const auto& t : mine.tensors()) {
    const gguf::TensorInfo* x = twice.find_tensor(t.name);
    ASSERT_NE(x, nullptr) << t.name;
    ASSERT_EQ(t.nbytes, x->nbytes) << t.name;
    EXPECT_EQ(std::memcmp(t.data, x->data, static_cast<size_t>(t.nbytes)), 0) << t.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Nemotron, NemotronGguf, ::testing::Values("nemotron_h_dense", "nemotron3_moe", "nemotron3_latent"),
                         [](const auto& i) { return i.param; });

// NVFP4 weights in llama.cpp's layout: the attention q/k rows the layout permutes move as whole
// NVFP4 rows (codes and scales), so a ModelOpt-layout directory of ours (its experts and shared
// expert kept: their widths 32 and 48 are no multiple of ggml's 64) and its GGUF run to the same
// bits in the integer-exact modes.
TEST(NemotronGgufNvfp4, Nvfp4RowsTravelExactly) {
  ScratchDir tmp;
  ConvertOptions d;
  d.keep = {"*exps*", "*shexp*"};
  convert(at("nemotron3_moe", "float"), tmp.path + "/dir", d);
  ConvertOptions g;
  g.keep = {"*"};
  g.head = "f16";
  g.verify = true;
  convert(tmp.path + "/dir", tmp.path + "/q.gguf", g);
  {
    const auto f = gguf::File::open(tmp.path + "/q.gguf");
    ASSERT_NE(f.find_tensor("blk.3.attn_q.weight"), nullptr);
    EXPECT_EQ(std::string(ggml_type_name(f.find_tensor("blk.3.attn_q.weight")->type)), "NVFP4");
    EXPECT_EQ(std::string(ggml_type_name(f.find_tensor("blk.3.attn_k.weight")->type)), "NVFP4");
  }
  ThreadPool pool(2);
  const ArchOracle o("nemotron3_moe", root());
  auto ck_dir = Checkpoint::open(tmp.path + "/dir"), ck_gguf = Checkpoint::open(tmp.path + "/q.gguf");
  for (Mode mode : {Mode::a16q8, Mode::f32}) {  // (w4a4 needs input scales: none in our directory)
    auto md = load_in(*ck_dir, mode), mg = load_in(*ck_gguf, mode);
    for (size_t p = 0; p < o.prompts(); ++p)
      EXPECT_TRUE(eval_all(*md, o.ids(p), pool) == eval_all(*mg, o.ids(p), pool)) << "prompt " << p;
  }
}

// llama.cpp's nemotron3_moe file rewritten with `key` set to `v`.
std::string edited(const ScratchDir& tmp, const std::string& key, const gguf::Value& v) {
  const auto f = gguf::File::open(at("nemotron3_moe", "llamacpp-float.gguf"));
  gguf::Writer w;
  for (const auto& [k, val] : f.metadata()) w.set(k, val);
  w.set(key, v);
  for (const auto& t : f.tensors()) w.add_tensor(t.name, t.ne, t.type, t.data, static_cast<uint64_t>(t.nbytes));
  const std::string path = tmp.path + "/edited.gguf";
  write_bytes(path, w.serialize());
  return path;
}


TEST(NemotronGgufBadInput, RefusedNamingTheKey) {
  ScratchDir tmp;
  {  // MLP and MoE layers in one model: llama.cpp's nemotron_h_moe has no MLP layer
    const Error e = refused([&] { convert(root() + "/nemotron_h/float", tmp.path + "/out.gguf", ConvertOptions{}); });
    EXPECT_EQ(e.tensor(), "nemotron_h.layer_pattern") << e.what();
    EXPECT_EQ(e.found(), "M*E-ME") << e.what();
    EXPECT_FALSE(exists(tmp.path + "/out.gguf"));
  }
  {  // a layer both attention and FFN
    const std::string path = edited(tmp, "nemotron_h_moe.feed_forward_length", gguf::u32_array_value({0, 32, 0, 32, 0, 32}));
    const Error e = refused([&] { Checkpoint::open(path); });
    EXPECT_EQ(e.tensor(), "nemotron_h_moe.feed_forward_length") << e.what();
    EXPECT_NE(e.found().find("layer 3"), std::string::npos) << e.what();
  }
  {  // attention layers of different KV head counts: this engine has one
    const std::string path = edited(tmp, "nemotron_h_moe.attention.head_count_kv", gguf::u32_array_value({0, 0, 2, 4, 0, 0}));
    const Error e = refused([&] { Checkpoint::open(path); });
    EXPECT_EQ(e.tensor(), "nemotron_h_moe.attention.head_count_kv") << e.what();
  }
  {  // a per-layer array shorter than the layers
    const std::string path = edited(tmp, "nemotron_h_moe.attention.head_count_kv", gguf::u32_array_value({0, 0, 0}));
    const Error e = refused([&] { Checkpoint::open(path); });
    EXPECT_EQ(e.tensor(), "nemotron_h_moe.attention.head_count_kv") << e.what();
  }
}

}  // namespace

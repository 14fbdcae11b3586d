// The architecture table and config.json -> GGUF keys (src/models/): names both ways, head_dim,
// rope scaling, and the refusals of options an entry cannot honour, each naming key and value.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <set>
#include <string>

#include "io/hf_names.h"
#include "io/hf_config.h"
#include "models/families.h"
#include "nvfp4/arch.h"
#include "nvfp4/error.h"

using namespace nvfp4;
using Json = nlohmann::json;

namespace {
const gguf::Value* find(const MetaList& m, const std::string& k) {
  for (const auto& [key, v] : m)
    if (key == k) return &v;
  return nullptr;
}
Json qwen3() {
  return Json::parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 3072, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000,
    "hidden_act": "silu", "sliding_window": null, "use_sliding_window": false, "tie_word_embeddings": true,
    "vocab_size": 151936})");
}
}  // namespace

TEST(ArchTable, EntriesByBothNames) {
  EXPECT_EQ(find_arch_hf("qwen3")->name, "qwen3");
  EXPECT_EQ(find_arch_hf("", "Qwen2ForCausalLM")->name, "qwen2");
  EXPECT_EQ(find_arch_hf("mistral")->gguf_name, "llama");  // as llama.cpp converts it
  EXPECT_EQ(find_arch("llama")->name, "llama");
  EXPECT_EQ(find_arch("qwen3")->rope, RopeStyle::neox);
  EXPECT_EQ(find_arch("llama")->rope, RopeStyle::adjacent);
  EXPECT_TRUE(find_arch("llama")->permute_qk);
  EXPECT_FALSE(find_arch("qwen2")->permute_qk);
  EXPECT_EQ(find_arch("qwen2")->qkv_bias, Need::required);
  EXPECT_EQ(find_arch("qwen3")->qk_norm, Need::required);
  EXPECT_EQ(find_arch("deepseek2"), nullptr);
  EXPECT_EQ(find_arch_hf("gemma3"), nullptr);
  EXPECT_EQ(hf::to_gguf_name("model.layers.7.self_attn.q_norm.weight"), "blk.7.attn_q_norm.weight");
  EXPECT_EQ(hf::to_gguf_name("model.layers.0.self_attn.k_proj.bias"), "blk.0.attn_k.bias");
  EXPECT_EQ(hf::to_hf_name("blk.3.attn_k_norm.weight"), "model.layers.3.self_attn.k_norm.weight");
  EXPECT_EQ(hf::to_hf_name("output.weight"), "lm_head.weight");
  EXPECT_EQ(hf::to_gguf_name("model.layers.x.mlp.up_proj.weight"), "model.layers.x.mlp.up_proj.weight");
}

TEST(ArchTable, ConfigJsonToGgufKeys) {
  const MetaList m = hf_config_meta(qwen3(), "config.json");
  EXPECT_EQ(find(m, "general.architecture")->s, "qwen3");
  EXPECT_EQ(find(m, "qwen3.attention.key_length")->u, 128u);
  EXPECT_EQ(find(m, "qwen3.attention.head_count_kv")->u, 8u);
  EXPECT_EQ(find(m, "qwen3.embedding_length")->u, 1024u);
  EXPECT_EQ(find(m, "qwen3.rope.freq_base")->f, 1000000.0);
  EXPECT_EQ(find(m, "qwen3.attention.sliding_window"), nullptr);  // use_sliding_window false
  // transformers 5's rope_parameters and 4.x's rope_scaling, llama3 type.
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    Json c = Json::parse(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4})");
    c[key] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
              {"original_max_position_embeddings", 8192}, {"rope_theta", 500000.0}};
    const MetaList l = hf_config_meta(c, "config.json");
    EXPECT_EQ(find(l, "llama.rope.scaling.type")->s, "llama3") << key;
    EXPECT_EQ(find(l, "llama.rope.scaling.original_context_length")->f, 8192.0) << key;
    EXPECT_EQ(find(l, "llama.rope.freq_base")->f, 500000.0) << key;
  }
  // Mistral's declared window is kept (Sequence refuses contexts beyond it).
  Json mi = Json::parse(R"({"model_type": "mistral", "sliding_window": 4096})");
  EXPECT_EQ(find(hf_config_meta(mi, "config.json"), "llama.attention.sliding_window")->u, 4096u);
  // An unknown family passes through (inspect works; Model::load refuses it by name).
  EXPECT_EQ(find(hf_config_meta(Json::parse(R"({"model_type": "gemma3"})"), "c"), "general.architecture")->s, "gemma3");
}

TEST(ArchTable, OptionsAnEntryCannotHonourAreRefusedNamingKeyAndValue) {
  const auto refused = [](Json c, const std::string& key, const std::string& value) {
    try {
      hf_config_meta(c, "dir/config.json");
      ADD_FAILURE() << "accepted " << key;
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("dir/config.json"), std::string::npos) << w;
      EXPECT_NE(w.find(key), std::string::npos) << w;
      EXPECT_NE(w.find(value), std::string::npos) << w;
    }
  };
  Json c = qwen3();
  c["hidden_act"] = "gelu";
  refused(c, "hidden_act", "gelu");
  c = qwen3();
  c["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  refused(c, "rope_scaling.rope_type", "dynamic");
  c = qwen3();
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  refused(c, "rope_scaling.rope_type", "yarn");
  c = qwen3();
  c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};  // its other parameters missing
  refused(c, "low_freq_factor", "null");
  c = qwen3();
  c["partial_rotary_factor"] = 0.5;
  refused(c, "partial_rotary_factor", "0.5");
  c = qwen3();
  c["num_hidden_layers"] = -3;
  refused(c, "num_hidden_layers", "-3");
  Json l = Json::parse(R"({"model_type": "llama", "mlp_bias": true})");
  refused(l, "mlp_bias", "true");
}

TEST(ArchTable, Llama3RopeFactorsAsTransformersComputesThem) {
  // Llama 3.1's parameters (factor 8, low 1, high 4, original 8192, theta 500000, head_dim 128):
  // high frequencies kept, low ones divided by 8, the band between smoothed. The smoothed values
  // are transformers 5.17's ROPE_INIT_FUNCTIONS["llama3"] (default inv_freq / llama3 inv_freq,
  // computed by torch in float32), so a relative 1e-6 covers its float32 rounding.
  const std::vector<float> f = rope_freq_factors_llama3(128, 500000.0, 8.0, 1.0, 4.0, 8192.0);
  ASSERT_EQ(f.size(), 64u);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[63], 8.0f);
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
  const std::pair<int, double> torch_f32[] = {{30, 1.5534145832061768}, {31, 2.026313066482544},
                                              {32, 2.6945302486419678}, {33, 3.684253454208374},
                                              {34, 5.257327079772949}, {35, 8.0}};
  for (const auto& [i, v] : torch_f32) EXPECT_NEAR(f[static_cast<size_t>(i)], v, 1e-6 * v) << i;
  for (int i = 0; i < 30; ++i) EXPECT_LT(f[static_cast<size_t>(i)], 1.6f) << i;
}

// Each entry's block is a family file's (src/models/<block>.cpp) and each family is some entry's:
// a family chosen from the table, none left over.
TEST(ArchTable, EveryEntryRunsItsFamilysBlock) {
  std::set<std::string_view> used;
  for (const ArchInfo& a : architectures()) {
    const Family* f = find_family(a.block);
    ASSERT_NE(f, nullptr) << a.name << ": block '" << a.block << "' has no family";
    EXPECT_NE(f->run, nullptr) << a.name;
    used.insert(f->block);
  }
  for (const Family& f : families()) {
    EXPECT_TRUE(used.count(f.block)) << "family " << f.block << " is no table entry's block";
    const std::string file = std::string(NVFP4_FIXTURES) + "/../src/models/" + std::string(f.block) + ".cpp";
    EXPECT_TRUE(std::ifstream(file).good()) << "family " << f.block << " has no file " << file;
  }
  EXPECT_EQ(find_family("no-such-block"), nullptr);
}

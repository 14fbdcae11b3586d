// A tiny random mixture-of-experts GGUF in llama.cpp's layout (stacked blk.N.ffn_*_exps NVFP4
// experts with one tensor scale and one input scale per expert, the router F32), written by our
// GGUF writer for the runtime's MoE tests. The real producers' checkpoints are fixtures/moe/.
#pragma once
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf_writer.h"
#include "nvfp4/layout.h"
#include "nvfp4/quantize.h"

namespace nvfp4::test {

struct TinyMoe {
  std::string arch = "qwen3moe";  // GGUF name: qwen3moe, qwen2moe, olmoe, llama (Mixtral)
  int64_t n_layer = 2, n_embd = 64, n_head = 4, n_head_kv = 2, head_dim = 16;
  int64_t n_expert = 8, n_used = 2, n_ff_exp = 64, n_ff_shexp = 0, n_vocab = 96;
  bool input_scales = true;  // per-expert input scales (W4A4)
  uint32_t seed = 7;
};

inline void write_tiny_moe(const std::string& path, const TinyMoe& t) {
  std::mt19937 rng(t.seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto keep = std::make_shared<std::vector<std::vector<uint8_t>>>();
  gguf::Writer w;
  const std::string a = t.arch + ".";
  w.set_string("general.architecture", t.arch);
  w.set_u32(a + "block_count", static_cast<uint32_t>(t.n_layer));
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(t.n_embd));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(t.n_ff_exp));
  w.set_u32(a + "attention.head_count", static_cast<uint32_t>(t.n_head));
  w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(t.n_head_kv));
  w.set_u32(a + "attention.key_length", static_cast<uint32_t>(t.head_dim));
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_u32(a + "expert_count", static_cast<uint32_t>(t.n_expert));
  w.set_u32(a + "expert_used_count", static_cast<uint32_t>(t.n_used));
  if (t.arch != "llama" && t.arch != "olmoe") w.set_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(t.n_ff_exp));
  if (t.n_ff_shexp > 0) w.set_u32(a + "expert_shared_feed_forward_length", static_cast<uint32_t>(t.n_ff_shexp));
  const auto f32 = [&](const std::string& name, std::vector<int64_t> ne, float scale, float bias) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::vector<uint8_t> b(static_cast<size_t>(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
      const float v = bias + scale * nd(rng);
      std::memcpy(b.data() + i * 4, &v, 4);
    }
    keep->push_back(std::move(b));
    w.add_tensor(name, std::move(ne), ggml::F32, keep->back().data(), keep->back().size());
  };
  // NVFP4 matrices, stacked over `stack` experts (1: a plain matrix), each with its own scales.
  const auto nvfp4 = [&](const std::string& base, int64_t n_out, int64_t n_in, int64_t stack) {
    std::vector<uint8_t> blocks;
    std::vector<uint8_t> s2(static_cast<size_t>(stack) * 4), is(static_cast<size_t>(stack) * 4);
    for (int64_t e = 0; e < stack; ++e) {
      std::vector<float> m(static_cast<size_t>(n_out * n_in));
      const float amp = 0.2f * (1.0f + 0.5f * static_cast<float>(e % 3));  // experts differ in scale
      for (float& v : m) v = amp * nd(rng);
      const RowMatrix q = quantize(m.data(), n_out, n_in, base);
      const GgmlMatrix g = row_to_ggml(q.view(), base);
      blocks.insert(blocks.end(), g.blocks.begin(), g.blocks.end());
      const float sc = q.scale2, in = 0.004f * (1.0f + 0.25f * static_cast<float>(e % 4));
      std::memcpy(s2.data() + e * 4, &sc, 4);
      std::memcpy(is.data() + e * 4, &in, 4);
    }
    keep->push_back(std::move(blocks));
    std::vector<int64_t> ne = {n_in, n_out};
    if (stack > 1 || base.find("_exps") != std::string::npos) ne.push_back(stack);
    w.add_tensor(base + ".weight", ne, ggml::NVFP4, keep->back().data(), keep->back().size());
    keep->push_back(std::move(s2));
    w.add_tensor(base + ".scale", {stack}, ggml::F32, keep->back().data(), keep->back().size());
    if (t.input_scales) {
      keep->push_back(std::move(is));
      w.add_tensor(base + ".input_scale", {stack}, ggml::F32, keep->back().data(), keep->back().size());
    }
  };
  f32("token_embd.weight", {t.n_embd, t.n_vocab}, 0.5f, 0.0f);
  f32("output_norm.weight", {t.n_embd}, 0.1f, 1.0f);
  f32("output.weight", {t.n_embd, t.n_vocab}, 0.2f, 0.0f);
  const int64_t qd = t.n_head * t.head_dim, kvd = t.n_head_kv * t.head_dim;
  const bool full_qk = t.arch == "olmoe";
  for (int64_t l = 0; l < t.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    f32(b + "attn_norm.weight", {t.n_embd}, 0.1f, 1.0f);
    f32(b + "ffn_norm.weight", {t.n_embd}, 0.1f, 1.0f);
    nvfp4(b + "attn_q", qd, t.n_embd, 1);
    nvfp4(b + "attn_k", kvd, t.n_embd, 1);
    nvfp4(b + "attn_v", kvd, t.n_embd, 1);
    nvfp4(b + "attn_output", t.n_embd, qd, 1);
    if (t.arch == "qwen2moe") {
      f32(b + "attn_q.bias", {qd}, 0.1f, 0.0f);
      f32(b + "attn_k.bias", {kvd}, 0.1f, 0.0f);
      f32(b + "attn_v.bias", {kvd}, 0.1f, 0.0f);
    }
    if (t.arch == "qwen3moe" || full_qk) {
      f32(b + "attn_q_norm.weight", {full_qk ? qd : t.head_dim}, 0.1f, 1.0f);
      f32(b + "attn_k_norm.weight", {full_qk ? kvd : t.head_dim}, 0.1f, 1.0f);
    }
    f32(b + "ffn_gate_inp.weight", {t.n_embd, t.n_expert}, 0.3f, 0.0f);
    nvfp4(b + "ffn_gate_exps", t.n_ff_exp, t.n_embd, t.n_expert);
    nvfp4(b + "ffn_up_exps", t.n_ff_exp, t.n_embd, t.n_expert);
    nvfp4(b + "ffn_down_exps", t.n_embd, t.n_ff_exp, t.n_expert);
    if (t.n_ff_shexp > 0) {
      f32(b + "ffn_gate_inp_shexp.weight", {t.n_embd}, 0.3f, 0.0f);
      nvfp4(b + "ffn_gate_shexp", t.n_ff_shexp, t.n_embd, 1);
      nvfp4(b + "ffn_up_shexp", t.n_ff_shexp, t.n_embd, 1);
      nvfp4(b + "ffn_down_shexp", t.n_embd, t.n_ff_shexp, 1);
    }
  }
  w.write(path);
}

}  // namespace nvfp4::test

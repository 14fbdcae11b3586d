// Gemma 4's MoE block (26B-A4B; transformers' Gemma4TextDecoderLayer with enable_moe_block,
// Gemma4TextRouter, Gemma4TextExperts): beside the dense MLP, on the same residual h,
//   m = post_ffn_norm_1(mlp(pre_ffn_norm(h)))
//   r = (norm(h) * router_scale) * hidden^-0.5        (norm without a weight)
//   weights: softmax over every expert of router(r), the top k renormalised, each times its
//            expert's per_expert_scale (route(), then the scale in float)
//   e = post_ffn_norm_2(sum_j w_j down_j(gelu_tanh(gate_j(n)) * up_j(n))),  n = pre_ffn_norm_2(h)
//   and the block goes on with post_ffn_norm(m + e) as its dense form does with post_ffn_norm(mlp).
// The experts run through the shared MoE FFN (src/models/moe_ffn.cpp, MoeOptions), each its own
// matrices: one per expert as the exporters write them, or views of transformers' stacked
// experts.gate_up_proj / down_proj (io/stacked_experts.h).
#include <cmath>

#include "models/builders.h"
#include "models/gemma4.h"
#include "models/loader.h"

namespace nvfp4 {

void gemma4_load_moe_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  const int64_t d = c.n_embd;
  load_ffn(L, b, c, w);  // the router (ffn_gate_inp) and the experts (ffn_{gate,up,down}_exps.E)
  w.ffn_norm_exp = L.norm(b + "pre_ffw_norm_2.weight", d);
  w.post_ffn_norm_mlp = L.norm(b + "post_ffw_norm_1.weight", d);
  w.post_ffn_norm_exp = L.norm(b + "post_ffw_norm_2.weight", d);
  w.router_scale = L.vec(b + "ffn_gate_inp_scale.weight", d);
  w.expert_scale = L.vec(b + "ffn_gate_exps_scale.weight", c.n_expert);
  w.router_norm.assign(static_cast<size_t>(d), 1.0f);
}

void gemma4_moe(StepRun& s, const LayerWeights& L) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, d = c.n_embd;
  s.rmsnorm(w.o.data(), L.post_ffn_norm_mlp, w.o.data(), n, d);
  w.moe_in.resize(static_cast<size_t>(w.n_batch * d));
  w.moe_out.resize(static_cast<size_t>(w.n_batch * d));
  float* r = w.moe_in.data();
  s.rmsnorm(w.x.data(), L.router_norm, r, n, d);
  const float root = static_cast<float>(std::pow(static_cast<double>(d), -0.5));  // hidden ** -0.5
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < d; ++i) r[t * d + i] = r[t * d + i] * L.router_scale[static_cast<size_t>(i)] * root;
  s.rmsnorm(w.x.data(), L.ffn_norm_exp, w.xn.data(), n, d);  // the dense MLP is done with xn
  MoeOptions opt;
  opt.router_in = r;
  opt.gelu = true;
  opt.expert_scale = &L.expert_scale;
  moe_ffn(s, L, w.xn.data(), w.moe_out.data(), opt);
  s.rmsnorm(w.moe_out.data(), L.post_ffn_norm_exp, w.moe_out.data(), n, d);
  for (int64_t i = 0; i < n * d; ++i) w.o.data()[i] = w.o.data()[i] + w.moe_out[static_cast<size_t>(i)];
}

}  // namespace nvfp4

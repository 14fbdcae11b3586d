// The Gated DeltaNet layer of the Qwen3.5 / Qwen3.6 / Qwen3-Next hybrids, over the step:
//   xn = RMSNorm(x) * attn_norm
//   qkv, z, b, a = in_proj_qkv(xn), in_proj_z(xn), in_proj_b(xn), in_proj_a(xn)
//     (Qwen3-Next: in_proj_qkvz and in_proj_ba, whose rows come grouped per key head: q, k, the
//     head's value heads' v, their z; then each group's b, a. Regrouped here into the same
//     layout, so one kernel serves both.)
//   y = the token mixer of kernels/gated_delta.h, token by token in each sequence's order, over the
//     sequence's recurrent state for this layer (conv window, then the head matrices)
//   x += out_proj(y)
// The projections run over all the step's tokens at once; the recurrence runs as items of one
// sequence's key-head group (gated_delta_group: groups share nothing), spread over the pool, each
// taking its sequence's tokens in order. So a token's bits depend on its own sequence's tokens
// alone, never on the step's size or company (docs/DETERMINISM.md), and a prompt gives the same
// bits in one step, token by token, or in chunks. A group's matrices (rep * d_k * d_v floats:
// 192 KiB at Qwen3.6-27B's shape) stay in cache across a verify step's tokens, and after each
// token it copies its part of the state to the snapshot slot the step asked for
// (RecurrentState::slot_for). Rounds of one token of every sequence, each sweeping every group's
// matrices (3 MiB a layer there), and one thread copying each snapshot whole, had made a verify
// step of 3 drafts spend 8x a plain step's time in this layer (BENCHMARKS 33).
#include <algorithm>
#include <utility>

#include "kernels/gated_delta.h"
#include "models/builders.h"

namespace nvfp4 {

namespace {
void grow(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
}

// Qwen3-Next's fused projections into in_proj_qkv's, in_proj_z's, in_proj_b's and in_proj_a's layouts.
void regroup(const LinearAttnConfig& g, int64_t n, const float* qkvz, const float* ba, float* qkv, float* z, float* b, float* a) {
  const int64_t dk = g.d_k, dv = g.d_v, rep = g.n_v_heads / g.n_k_heads, C = g.conv_dim(), vd = g.value_dim(), nv = g.n_v_heads;
  const int64_t group = 2 * dk + 2 * rep * dv;
  for (int64_t t = 0; t < n; ++t) {
    const float* src = qkvz + t * (C + vd);
    for (int64_t kh = 0; kh < g.n_k_heads; ++kh) {
      const float* s = src + kh * group;
      std::copy_n(s, dk, qkv + t * C + kh * dk);
      std::copy_n(s + dk, dk, qkv + t * C + g.key_dim() + kh * dk);
      std::copy_n(s + 2 * dk, rep * dv, qkv + t * C + 2 * g.key_dim() + kh * rep * dv);
      std::copy_n(s + 2 * dk + rep * dv, rep * dv, z + t * vd + kh * rep * dv);
      const float* sb = ba + t * 2 * nv + kh * 2 * rep;
      std::copy_n(sb, rep, b + t * nv + kh * rep);
      std::copy_n(sb + rep, rep, a + t * nv + kh * rep);
    }
  }
}
}  // namespace

void build_gated_delta(StepRun& s, const LayerWeights& L, int64_t l) {
  const ModelConfig& c = s.m.cfg;
  const LinearAttnConfig& g = c.linear;
  const LinearAttnWeights& W = L.lin;
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, C = g.conv_dim(), vd = g.value_dim(), nv = g.n_v_heads;
  s.rmsnorm(w.x.data(), L.attn_norm, w.xn.data(), n, c.n_embd);
  grow(w.lin_qkv, n * C);
  grow(w.lin_z, n * vd);
  grow(w.lin_b, n * nv);
  grow(w.lin_a, n * nv);
  grow(w.lin_y, n * vd);
  {
    PartTimer timer(w.prof, StepProfile::attn_proj,
                    static_cast<double>(W.qkv.bytes + W.z.bytes + W.qkvz.bytes + W.b.bytes + W.a.bytes + W.ba.bytes));
    if (W.qkvz.n_out > 0) {
      grow(w.lin_fused, n * (C + vd));
      grow(w.lin_fused_ba, n * 2 * nv);
      // NVFP4 beside NVFP4: one dispatch for both (the same input; each row's bits are its own
      // forward()'s). A float ba (small_linear) runs on its own.
      if (W.ba.nvfp4) {
        s.run_group({{&W.qkvz, w.lin_fused.data()}, {&W.ba, w.lin_fused_ba.data()}}, w.xn.data());
      } else {
        s.run(W.qkvz, w.xn.data(), w.lin_fused.data());
        s.run(W.ba, w.xn.data(), w.lin_fused_ba.data());
      }
      regroup(g, n, w.lin_fused.data(), w.lin_fused_ba.data(), w.lin_qkv.data(), w.lin_z.data(), w.lin_b.data(), w.lin_a.data());
    } else {
      if (W.b.nvfp4 && W.a.nvfp4) {
        s.run_group({{&W.qkv, w.lin_qkv.data()}, {&W.z, w.lin_z.data()}, {&W.b, w.lin_b.data()}, {&W.a, w.lin_a.data()}},
                    w.xn.data());
      } else {
        s.run_group({{&W.qkv, w.lin_qkv.data()}, {&W.z, w.lin_z.data()}}, w.xn.data());
        s.run(W.b, w.xn.data(), w.lin_b.data());
        s.run(W.a, w.xn.data(), w.lin_a.data());
      }
    }
  }
  {
    const GatedDeltaShape sh{g.n_k_heads, g.n_v_heads, g.d_k, g.d_v, g.conv_kernel};
    const GatedDeltaWeights gw{W.conv_w.data(), W.A_log.data(), W.dt_bias.data(), W.norm.data(), c.rms_eps};
    const size_t conv_floats = sh.conv_state_floats();
    PartTimer timer(w.prof, StepProfile::recurrent,
                    2.0 * static_cast<double>(n) * static_cast<double>(g.state_floats()) * 4.0);  // each token reads and writes its state
    const int64_t nk = g.n_k_heads, scratch_n = group_scratch_floats(sh);
    const int64_t dk = g.d_k, dv = g.d_v, rep = nv / nk, K1 = g.conv_kernel - 1, kd = g.key_dim();
    // Group kh's part of a state: its conv channels (q, k and its value heads' v, K - 1 floats
    // each) and its value heads' matrices.
    const auto copy_group = [&](const float* from, float* to, int64_t kh) {
      for (const auto& [c0, nc] : {std::pair{kh * dk, dk}, std::pair{kd + kh * dk, dk}, std::pair{2 * kd + kh * rep * dv, rep * dv}})
        std::copy_n(from + c0 * K1, nc * K1, to + c0 * K1);
      const size_t m0 = conv_floats + static_cast<size_t>(kh * rep * dk * dv);
      std::copy_n(from + m0, rep * dk * dv, to + m0);
    };
    fold_groups(s, l, nk, scratch_n, [&](float* state, int64_t kh, int64_t t, float* scratch) {
      gated_delta_group(sh, gw, kh, w.lin_qkv.data() + t * C, w.lin_z.data() + t * vd, w.lin_a.data() + t * nv,
                        w.lin_b.data() + t * nv, state, state + conv_floats, w.lin_y.data() + t * vd, scratch);
    }, copy_group);
  }
  {
    PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(W.out.bytes));
    s.run(W.out, w.lin_y.data(), w.o.data());
  }
  s.residual(w.x.data(), w.o.data(), c.n_embd);
}

}  // namespace nvfp4

// The Mamba-2 layer of Nemotron-H, over the step:
//   xn = RMSNorm(x) * norm
//   zxbcdt = in_proj(xn)            (z | xBC | dt rows, transformers' split)
//   y = the token mixer of kernels/mamba2.h, token by token in each sequence's order, over the
//     sequence's recurrent state for this layer (conv window, then the heads' states)
//   x += out_proj(y)
// As the Gated DeltaNet layer (gated_delta_layer.cpp): in_proj and out_proj run over all the
// step's tokens at once; the scan runs as items of one sequence's group of B and C (mamba2_group:
// groups share nothing) spread over the pool, each taking its sequence's tokens in order, so a
// group's heads' states stay in cache across a verify step's tokens. A token's bits depend on its
// own sequence's tokens alone, never on the step's size or company (docs/DETERMINISM.md). After
// each token a group copies its part of the state to the snapshot slot a verify step asked for
// (RecurrentState::slot_for). `--profile` counts the whole layer (in_proj, the scan
// with the states read and written, out_proj) as its "recurrent" part.
#include <algorithm>
#include <utility>

#include "kernels/mamba2.h"
#include "models/builders.h"

namespace nvfp4 {

void build_mamba(StepRun& s, const LayerWeights& L, int64_t l) {
  const ModelConfig& c = s.m.cfg;
  const MambaConfig& mc = c.mamba;
  const MambaWeights& W = L.mamba;
  Workspace::Impl& w = s.ws;
  const Mamba2Shape sh{mc.n_heads, mc.head_dim, mc.d_state, mc.n_groups, mc.conv_kernel};
  const int64_t n = s.n, P = sh.in_proj_rows(), inner = sh.inner();
  s.rmsnorm(w.x.data(), L.attn_norm, w.xn.data(), n, c.n_embd);
  if (w.lin_qkv.size() < static_cast<size_t>(n * P)) w.lin_qkv.resize(static_cast<size_t>(n * P));
  if (w.lin_y.size() < static_cast<size_t>(n * inner)) w.lin_y.resize(static_cast<size_t>(n * inner));
  {
    PartTimer timer(w.prof, StepProfile::recurrent, static_cast<double>(W.in.bytes));
    s.run(W.in, w.xn.data(), w.lin_qkv.data());
  }
  {
    const Mamba2Weights mw{W.conv_w.data(), W.conv_b.empty() ? nullptr : W.conv_b.data(), W.A_log.data(), W.dt_bias.data(),
                           W.D.data(), W.norm.data(), c.rms_eps, mc.dt_min, mc.dt_max};
    const size_t conv_floats = sh.conv_state_floats();
    PartTimer timer(w.prof, StepProfile::recurrent, 2.0 * static_cast<double>(n) * static_cast<double>(mc.state_floats()) * 4.0);
    const int64_t ng = mc.n_groups, scratch_n = mamba2_scratch_floats(sh);
    const int64_t ds = sh.d_state, hd = sh.head_dim, hpg = sh.n_heads / ng, gw = hpg * hd, K1 = sh.conv_kernel - 1;
    // Group g's part of a state: its x, B and C conv channels (K - 1 floats each) and its heads' S.
    const auto copy_group = [&](const float* from, float* to, int64_t g) {
      for (const auto& [c0, nc] : {std::pair{g * gw, gw}, std::pair{inner + g * ds, ds}, std::pair{inner + ng * ds + g * ds, ds}})
        std::copy_n(from + c0 * K1, nc * K1, to + c0 * K1);
      const size_t m0 = conv_floats + static_cast<size_t>(g * hpg * ds * hd);
      std::copy_n(from + m0, hpg * ds * hd, to + m0);
    };
    fold_groups(s, l, ng, scratch_n, [&](float* state, int64_t g, int64_t t, float* scratch) {
      mamba2_group(sh, mw, g, w.lin_qkv.data() + t * P, state, state + conv_floats, w.lin_y.data() + t * inner, scratch);
    }, copy_group);
  }
  {
    PartTimer timer(w.prof, StepProfile::recurrent, static_cast<double>(W.out.bytes));
    s.run(W.out, w.lin_y.data(), w.o.data());
  }
  s.residual(w.x.data(), w.o.data(), c.n_embd);
}

}  // namespace nvfp4

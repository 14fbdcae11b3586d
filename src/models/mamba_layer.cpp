// The Mamba-2 layer of Nemotron-H, over the step:
//   xn = RMSNorm(x) * norm
//   zxbcdt = in_proj(xn)            (z | xBC | dt rows, transformers' split)
//   y = the token mixer of kernels/mamba2.h, token by token in each sequence's order, over the
//     sequence's recurrent state for this layer (conv window, then the heads' states)
//   x += out_proj(y)
// As the Gated DeltaNet layer (gated_delta_layer.cpp): in_proj and out_proj run over all the
// step's tokens at once; the scan runs in rounds, round r taking the r-th token of every sequence
// of the step, its groups of B and C spread over the pool (mamba2_group: groups share nothing).
// So a token's bits depend on its own sequence's tokens alone, never on the step's size or
// company (docs/DETERMINISM.md). After each round a sequence's state takes the snapshot a verify
// step asked for (RecurrentState::folded). `--profile` counts the whole layer (in_proj, the scan
// with the states read and written, out_proj) as its "recurrent" part.
#include <algorithm>

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
    std::vector<RecurrentState*> st;
    size_t rounds = 0;
    for (const auto& q : w.seqs) {
      st.push_back(static_cast<RecurrentState*>(q.seq->impl().layers[static_cast<size_t>(l)].get()));
      rounds = std::max(rounds, q.tok.size());
    }
    PartTimer timer(w.prof, StepProfile::recurrent, 2.0 * static_cast<double>(n) * static_cast<double>(mc.state_floats()) * 4.0);
    const int64_t ng = mc.n_groups, scratch_n = mamba2_scratch_floats(sh);
    std::vector<size_t> active;
    for (size_t r = 0; r < rounds; ++r) {
      active.clear();
      for (size_t i = 0; i < w.seqs.size(); ++i)
        if (w.seqs[i].tok.size() > r) active.push_back(i);
      const auto run_items = [&](int64_t i0, int64_t i1) {
        std::vector<float> scratch(static_cast<size_t>(scratch_n));
        for (int64_t it = i0; it < i1; ++it) {
          const size_t si = active[static_cast<size_t>(it / ng)];
          const int64_t g = it % ng, t = w.seqs[si].tok[r];
          float* state = st[si]->data();
          mamba2_group(sh, mw, g, w.lin_qkv.data() + t * P, state, state + conv_floats, w.lin_y.data() + t * inner, scratch.data());
        }
      };
      const int64_t items = static_cast<int64_t>(active.size()) * ng;
      if (items < 2) run_items(0, items);
      else s.parallel(items, run_items);
      for (const size_t si : active) st[si]->folded(w.step.tok[static_cast<size_t>(w.seqs[si].tok[r])].pos + 1);
    }
  }
  {
    PartTimer timer(w.prof, StepProfile::recurrent, static_cast<double>(W.out.bytes));
    s.run(W.out, w.lin_y.data(), w.o.data());
  }
  s.residual(w.x.data(), w.o.data(), c.n_embd);
}

}  // namespace nvfp4

// OLMoE (entry "olmoe"): RMSNorm over each token's whole q and k projections (weights [q_dim],
// [kv_dim]) before NeoX RoPE; routed experts, not renormalised.
#include "models/families.h"

namespace nvfp4 {

void olmoe_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  build_qkv(s, L);
  build_qk_norm_full(s, L);
  build_attn(s, L, l);
  build_ffn(s, L);  // FfnKind::moe
}

}  // namespace nvfp4

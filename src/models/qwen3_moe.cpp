// Qwen3-MoE (entry "qwen3_moe"): Qwen3's attention (per-head q/k RMSNorm); routed experts,
// their weights renormalised (norm_topk_prob).
#include "models/families.h"

namespace nvfp4 {

void qwen3_moe_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  build_qkv(s, L);
  build_qk_norm_heads(s, L);
  build_attn(s, L, l);
  build_ffn(s, L);  // FfnKind::moe
}

}  // namespace nvfp4

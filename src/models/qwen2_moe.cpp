// Qwen2-MoE (entry "qwen2_moe"): Qwen2's attention (q/k/v biases); routed experts plus one
// shared expert behind a sigmoid gate (moe_ffn).
#include "models/families.h"

namespace nvfp4 {

void qwen2_moe_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  build_qkv(s, L);
  build_attn(s, L, l);
  build_ffn(s, L);  // FfnKind::moe, with the shared expert
}

}  // namespace nvfp4

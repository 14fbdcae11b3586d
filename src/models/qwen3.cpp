// Qwen3 (entry "qwen3"): RMSNorm over each q and k head (weights [head_dim]) before NeoX RoPE;
// head_dim independent of hidden / heads; no biases.
#include "models/families.h"

namespace nvfp4 {

void qwen3_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  build_qkv(s, L);
  build_qk_norm_heads(s, L);
  build_attn(s, L, l);
  build_ffn(s, L);
}

}  // namespace nvfp4

// Qwen2 / Qwen2.5 (entry "qwen2"): Llama's block with q/k/v biases (required; added by the
// projections) and NeoX RoPE on HF's row order.
#include "models/families.h"

namespace nvfp4 {

void qwen2_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  build_qkv(s, L);
  build_attn(s, L, l);
  build_ffn(s, L);
}

}  // namespace nvfp4

// Llama 2 and 3.x (arch table entry "llama"): pre-norm attention with adjacent-pair RoPE (q/k
// rows permuted by the converter), q/k/v and output biases when config.json's attention_bias says
// so (added by the projections), then a pre-norm SwiGLU MLP.
#include "models/families.h"

namespace nvfp4 {

void llama_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  build_qkv(s, L);
  build_attn(s, L, l);
  build_ffn(s, L);
}

}  // namespace nvfp4

// Mistral (entry "mistral"; GGUF says "llama"): Llama's block. A sliding window that would
// apply is refused at load (ModelConfig::sliding_window).
#include "models/families.h"

namespace nvfp4 {

void mistral_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  build_qkv(s, L);
  build_attn(s, L, l);
  build_ffn(s, L);
}

}  // namespace nvfp4

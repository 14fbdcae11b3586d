// Mixtral (entry "mixtral"; GGUF "llama" with expert_count): Llama's attention; every FFN is
// routed experts, softmax over the k selected logits (MoeGating::softmax_topk).
#include "models/families.h"

namespace nvfp4 {

void mixtral_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  build_qkv(s, L);
  build_attn(s, L, l);
  build_ffn(s, L);  // FfnKind::moe
}

}  // namespace nvfp4

// The blocks of src/models/, built from the ops of src/ops/ (StepRun): one layer of the step, in
// place on ws.x.
#pragma once
#include <cstdint>

#include "ops/step_impl.h"

namespace nvfp4 {

void dense_block(StepRun& s, int64_t layer);
// The mixture-of-experts FFN (src/models/moe_block.cpp): out[t] for the step's normed rows xn[t].
void moe_ffn(StepRun& s, const LayerWeights& L, const float* xn, float* out);
// The router's choice for one token: sel[j] and weight[j] for j < n_expert_used, in rank order.
void route(const ModelConfig& c, const float* logits, int32_t* sel, float* weight);

}  // namespace nvfp4

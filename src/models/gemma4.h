// Gemma 4's pieces shared by its files (src/models/gemma4*.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "kernels/pinned_math.h"
#include "ops/step_impl.h"

namespace nvfp4 {

struct Loader;

// gelu with tanh in the pinned order (kernels/pinned_math.h); geglu_rows (kernels/attention_kernels.h)
// is its vector form times up, the same bits.
using pinned::gelu_tanh;

// Per-layer embeddings (src/models/gemma4_ple.cpp). Loading: the table, its projection and norm
// into m (c.n_embd_per_layer > 0), and layer b's gate, projection and norm into w.
void gemma4_load_ple(const Loader& L, const ModelConfig& c, Model::Impl& m);
void gemma4_load_ple_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w);
// Before layer 0 (x: the scaled embedding): every layer's input into ws.ple [n][n_layer][ple].
void gemma4_ple_inputs(StepRun& s);
// After layer l's FFN: x += post_norm(proj(gelu_tanh(gate(x)) * ple[l])).
void gemma4_ple_layer(StepRun& s, const LayerWeights& L, int64_t l);

}  // namespace nvfp4

namespace nvfp4 {

// The MoE block beside the dense MLP (26B-A4B; src/models/gemma4_moe.cpp). Loading: layer b's
// router, its scales, the experts and their norms into w (c.n_expert > 0).
void gemma4_load_moe_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w);
// With the dense MLP's output in ws.o and the layer's input (the FFN's residual) in ws.x:
// ws.o = post_ffn_norm_mlp(ws.o) + post_ffn_norm_exp(experts(ffn_norm_exp(x))), routed on x.
void gemma4_moe(StepRun& s, const LayerWeights& L);

}  // namespace nvfp4

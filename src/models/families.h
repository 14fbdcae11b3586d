// The families: one file per family under src/models/ (llama.cpp, qwen3.cpp, ...), each its block
// composed from the shared builders (models/builders.h). The architecture table
// (src/io/arch_table.cpp, nvfp4/arch.h) names each entry's block; Model::load runs that block for
// every layer. Adding a family: its table entry (names, tensors, hyperparameter keys) and, where
// its block differs, a file here plus its line in families.cpp (docs/DESIGN.md, "Adding a family").
#pragma once
#include <span>
#include <string>
#include <string_view>

#include "models/builders.h"

namespace nvfp4 {

struct Loader;

struct Family {
  std::string_view block;  // ArchInfo::block: "qwen3"
  BlockFn run;
  // The family's own hyperparameters, read after the common ones (metadata prefix a = "qwen35."),
  // and its own layer loading; nullptr: the Llama-like defaults of model_load.cpp.
  void (*configure)(Loader& L, const std::string& a, ModelConfig& c) = nullptr;
  void (*load_layer)(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) = nullptr;
};

// Every family, and the one whose block is `block` (nullptr when none is).
std::span<const Family> families();
const Family* find_family(std::string_view block);

void llama_block(StepRun& s, int64_t layer);
void mistral_block(StepRun& s, int64_t layer);
void qwen2_block(StepRun& s, int64_t layer);
void qwen3_block(StepRun& s, int64_t layer);
void mixtral_block(StepRun& s, int64_t layer);
void qwen2_moe_block(StepRun& s, int64_t layer);
void qwen3_moe_block(StepRun& s, int64_t layer);
void olmoe_block(StepRun& s, int64_t layer);
// Qwen3.5 / Qwen3.6 / Qwen3-Next (src/models/qwen3_5.cpp).
void qwen3_5_block(StepRun& s, int64_t layer);
void qwen3_5_configure(Loader& L, const std::string& a, ModelConfig& c);
void qwen3_5_load_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w);

// Gemma 4, text (src/models/gemma4.cpp).
void gemma4_block(StepRun& s, int64_t layer);
void gemma4_configure(Loader& L, const std::string& a, ModelConfig& c);
void gemma4_load_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w);

// Nemotron-H / Nemotron 3 (src/models/nemotron_h.cpp).
void nemotron_h_block(StepRun& s, int64_t layer);
void nemotron_h_configure(Loader& L, const std::string& a, ModelConfig& c);
void nemotron_h_load_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w);

// Muse Glimmer, text (src/models/muse_glimmer.cpp).
void muse_glimmer_block(StepRun& s, int64_t layer);
void muse_glimmer_configure(Loader& L, const std::string& a, ModelConfig& c);
void muse_glimmer_load_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w);

}  // namespace nvfp4

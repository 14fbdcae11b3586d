// The families: one file per family under src/models/ (llama.cpp, qwen3.cpp, ...), each its block
// composed from the shared builders (models/builders.h). The architecture table
// (src/io/arch_table.cpp, nvfp4/arch.h) names each entry's block; Model::load runs that block for
// every layer. Adding a family: its table entry (names, tensors, hyperparameter keys) and, where
// its block differs, a file here plus its line in families.cpp (docs/DESIGN.md, "Adding a family").
#pragma once
#include <span>
#include <string_view>

#include "models/builders.h"

namespace nvfp4 {

struct Family {
  std::string_view block;  // ArchInfo::block: "qwen3"
  BlockFn run;
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

}  // namespace nvfp4

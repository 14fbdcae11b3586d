#include "models/families.h"

namespace nvfp4 {

namespace {
constexpr Family kFamilies[] = {
    {"llama", llama_block},         {"mistral", mistral_block},     {"qwen2", qwen2_block},
    {"qwen3", qwen3_block},         {"mixtral", mixtral_block},     {"qwen2_moe", qwen2_moe_block},
    {"qwen3_moe", qwen3_moe_block}, {"olmoe", olmoe_block},
    {"qwen3_5", qwen3_5_block, qwen3_5_configure, qwen3_5_load_layer},
    {"gemma4", gemma4_block, gemma4_configure, gemma4_load_layer},
    {"nemotron_h", nemotron_h_block, nemotron_h_configure, nemotron_h_load_layer},
    {"muse_glimmer", muse_glimmer_block, muse_glimmer_configure, muse_glimmer_load_layer},
};
}  // namespace

std::span<const Family> families() { return kFamilies; }

const Family* find_family(std::string_view block) {
  for (const Family& f : kFamilies)
    if (f.block == block) return &f;
  return nullptr;
}

}  // namespace nvfp4

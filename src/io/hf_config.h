// An HF config.json as GGUF metadata (the keys llama.cpp's convert_hf_to_gguf.py writes), so the
// runtime reads one kind of hyperparameters whatever the container.
#pragma once
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nvfp4/arch.h"
#include "nvfp4/gguf.h"

namespace nvfp4 {

using MetaList = std::vector<std::pair<std::string, gguf::Value>>;

// general.architecture (the entry's GGUF name, or model_type as it is for an unknown family, which
// Model::load then refuses) and <arch>.block_count, embedding_length, feed_forward_length,
// attention.head_count(_kv), attention.key_length/value_length (an explicit head_dim),
// context_length, vocab_size, rope.freq_base, attention.layer_norm_rms_epsilon,
// rope.scaling.{type,factor,original_context_length} (+ low/high_freq_factor for llama3),
// attention.sliding_window where one applies. For a known family, an option it cannot honour
// (hidden_act other than silu, an unknown rope type, partial rotary, MLP bias) throws
// nvfp4::Error naming `file`, the key and its value.
// `origin`, when given, receives each key read from one config.json key ("llama.block_count" ->
// "num_hidden_layers"), so that a refusal can name the key as the user's file spells it.
MetaList hf_config_meta(const nlohmann::json& config, const std::string& file,
                        std::map<std::string, std::string>* origin = nullptr);

// Nemotron-H's own keys (hf_config_nemotron.cpp) under prefix a ("nemotron_h."): the layer
// pattern, the Mamba-2 sizes and dt limits, the router's; throws nvfp4::Error naming `file`, the
// key and its value for what the engine does not run.
void nemotron_h_meta(const nlohmann::json& config, const std::string& file, const std::string& a, MetaList& out);

// The family of a config.json, nullptr when unknown.
const ArchInfo* hf_config_arch(const nlohmann::json& config);

}  // namespace nvfp4

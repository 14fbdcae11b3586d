// The GGUF metadata of a safetensors (HF) checkpoint, as llama.cpp's convert_hf_to_gguf.py writes
// it: general.architecture first, then every other general.* and <arch>.* key the checkpoint
// presents (hyperparameters from config.json, under llama.cpp's keys), the tokenizer under
// tokenizer.ggml.* and tokenizer.chat_template, and the extra tensors llama.cpp's converter
// generates (rope_freqs.weight for Llama 3 RoPE scaling).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "nvfp4/checkpoint.h"
#include "nvfp4/gguf_writer.h"

namespace nvfp4 {

struct GgufFromHf {
  std::vector<std::pair<std::string, std::vector<float>>> f32_tensors;  // 1-D F32 tensors to add
  std::vector<std::string> notes;
};

// Sets the keys on W. The tokenizer comes from TOKENIZER_GGUF when given (a GGUF file whose
// tokenizer.* keys are taken), else from the checkpoint's own tokenizer.* metadata, else from the
// HF directory's tokenizer files; a checkpoint with none of these gets tokenizer.ggml.model =
// "none" (llama.cpp loads it without a vocabulary) and a note. Throws nvfp4::Error.
GgufFromHf gguf_meta_from_checkpoint(const Checkpoint& ck, gguf::Writer& w, const std::string& tokenizer_gguf);

}  // namespace nvfp4

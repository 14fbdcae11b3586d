// The tokenizer files of an HF directory written by `convert ... DIR/`: copied from an HF source,
// or written from a GGUF's tokenizer.ggml.* metadata as tokenizer.json (byte-level BPE: model,
// vocabulary, merges, added tokens, the pre-tokenizer llama.cpp's `pre` name stands for) and
// tokenizer_config.json (bos/eos, add_bos_token, chat_template).
#pragma once
#include <string>
#include <vector>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {

// Writes the files into `dir`; returns their names. A vocabulary it cannot describe
// (SentencePiece-style "llama", an unknown pre-tokenizer) throws nvfp4::Error naming it.
std::vector<std::string> write_hf_tokenizer(const Checkpoint& ck, const std::string& dir);

}  // namespace nvfp4

// TokenizerData -> GGUF metadata under llama.cpp's keys (the keys src/runtime/tokenizer_gguf.cpp
// reads, as gguf-py's GGUFWriter types them): tokenizer.ggml.model / pre (string), tokens and
// merges (string arrays), token_type (i32 array), bos/eos/eot/padding/unknown_token_id (u32, only
// when set), add_bos_token (bool), tokenizer.chat_template (string, when non-empty).
#pragma once
#include "nvfp4/gguf_writer.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4 {

// Validates D first (Tokenizer::build: a tokenizer our runtime cannot load is not written), then
// sets the keys on W. Throws nvfp4::Error naming d.source.
void write_tokenizer_gguf(const TokenizerData& d, gguf::Writer& w);

}  // namespace nvfp4

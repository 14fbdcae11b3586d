// TokenizerData -> GGUF metadata under llama.cpp's keys (the keys src/text/tokenizer_gguf.cpp
// reads, as gguf-py's GGUFWriter types them): tokenizer.ggml.model / pre (string), tokens and
// merges (string arrays), scores (f32 array, when present), token_type (i32 array), bos/eos/eot/padding/unknown_token_id (u32, only
// when set), add_bos_token (bool), tokenizer.chat_template (string, when non-empty).
#pragma once
#include <string>
#include <vector>

#include "nvfp4/gguf_writer.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4 {

// Validates D first (Tokenizer::build: a tokenizer our runtime cannot load is not written), checks
// that the tokenizer the keys describe encodes probe texts and every added/special token's text as
// D does (GGUF implies HF's pipeline details by the model and pre names), then sets the keys on W.
// An NFC normalizer (no GGUF key; llama.cpp does not normalize) is dropped with a note, returned.
// Throws nvfp4::Error naming d.source.
std::vector<std::string> write_tokenizer_gguf(const TokenizerData& d, gguf::Writer& w);

}  // namespace nvfp4

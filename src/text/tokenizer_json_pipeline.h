// The parts of tokenizer.json around the model: normalizer, pre_tokenizer, decoder and
// post_processor, recognised against the forms published files use and turned into
// TokenizerData fields (pre, nfc, space_prefix, metaspace_split, decode_strip); anything else is
// refused naming the field, what is supported and what was found.
#pragma once
#include <string>

#include "nvfp4/tokenizer.h"
#include "text/json_fields.h"

namespace nvfp4::hfjson {

// d.model must be set ("gpt2" or "llama"). Fills d.pre, d.nfc, d.space_prefix,
// d.metaspace_split and d.decode_strip.
void read_pipeline(const jsonf::Json& root, const std::string& file, TokenizerData& d);
// The token that post_processor's TemplateProcessing puts first ("" if none).
std::string template_bos(const jsonf::Json& root, const std::string& file);
// The Split regex of a byte-level pre-tokenizer by its llama.cpp name ("llama-bpe", "qwen2",
// "gpt-2"); nullptr for any other name.
const char* split_pattern(const std::string& pre);

}  // namespace nvfp4::hfjson

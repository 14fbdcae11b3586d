// Pre-tokenizers of byte-level BPE vocabularies: split text into the pieces that BPE merges
// within. Written by hand over Unicode classes (runtime/unicode.h), no regex engine.
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace nvfp4 {

enum class PreTokenizer {
  // GPT-2's ByteLevel regex, as HF tokenizers applies it:
  //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  gpt2,
  // SmolLM / StarCoder (GGUF tokenizer.ggml.pre "smollm", "starcoder", ...): every \p{N} code point
  // is a piece of its own (HF `Digits(individual_digits=true)`), then gpt2 on the rest.
  digits_then_gpt2,
};

// Byte ranges [begin, end) of the pieces of `text`, in order, covering all of it.
std::vector<std::pair<uint32_t, uint32_t>> pretokenize(std::string_view text, PreTokenizer kind);

}  // namespace nvfp4

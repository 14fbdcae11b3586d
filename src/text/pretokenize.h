// Pre-tokenizers of byte-level BPE vocabularies: split text into the pieces that BPE merges
// within. Written by hand over Unicode classes (text/unicode.h), no regex engine.
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "text/unicode.h"

namespace nvfp4 {

enum class PreTokenizer {
  // GPT-2's ByteLevel regex, as HF tokenizers applies it:
  //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  gpt2,
  // SmolLM / StarCoder (GGUF tokenizer.ggml.pre "smollm", "starcoder", ...): every \p{N} code point
  // is a piece of its own (HF `Digits(individual_digits=true)`), then gpt2 on the rest.
  digits_then_gpt2,
  // Llama 3's Split regex (GGUF "llama-bpe"):
  //   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
  //   \s*[\r\n]+|\s+(?!\S)|\s+
  llama3,
  // Qwen2's (GGUF "qwen2", "deepseek-r1-qwen"): Llama 3's with \p{N} instead of \p{N}{1,3}.
  qwen2,
  // DeepSeek V3's three Splits (GGUF "deepseek-v3"): see pretokenize_deepseek3.cpp.
  deepseek3,
};

// Byte ranges [begin, end) of the pieces of `text`, in order, covering all of it.
std::vector<std::pair<uint32_t, uint32_t>> pretokenize(std::string_view text, PreTokenizer kind);

namespace pretok {
// The classes the regexes use: \p{L}, \p{N}, \s, and everything else (also invalid bytes).
enum Cls : uint8_t { kLetter, kNumber, kSpace, kOther };
Cls classify(uint32_t cp);
// Length in code points of the Llama 3 / Qwen2 regex match at i (i < n) within [0, n);
// max_digits 3 (Llama 3) or 1 (Qwen2).
size_t llama3_match(const std::vector<unicode::Char>& c, const std::vector<Cls>& k, size_t i,
                    size_t n, size_t max_digits);
// DeepSeek V3's pieces of the whole text.
void split_deepseek3(const std::vector<unicode::Char>& c, std::vector<std::pair<uint32_t, uint32_t>>& out);
}  // namespace pretok

}  // namespace nvfp4

// The tokenizer's internals, shared by its files: tokenizer_bpe.cpp (build, merges, encode),
// tokenizer_added.cpp (added tokens in the text), tokenizer_spm.cpp (SentencePiece-style pieces).
#pragma once
#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nvfp4/tokenizer.h"
#include "text/pretokenize.h"
#include "text/tokenizer_tables.h"

namespace nvfp4 {

struct Tokenizer::Impl {
  TokenizerData d;  // tokens, merges, token types and scores emptied once built (in the tables)
  bool spm = false;                                        // model "llama"
  PreTokenizer pre_kind = PreTokenizer::gpt2;
  Vocabulary vocab;                                        // token strings by id, and ids by string
  MergeTable merges;                                       // (l,r) -> (rank, id)
  std::array<int32_t, 256> byte_token{};                   // id of each byte's token, -1 if none
  std::array<uint32_t, 256> byte_to_cp{};                  // GPT-2's bytes_to_unicode
  std::unordered_map<uint32_t, uint8_t> cp_to_byte;
  StringPool bytes;                                        // decoded bytes of every token
  std::vector<AddedToken> added;                           // resolved added tokens
  std::vector<uint8_t> special;                            // per id: a special added token
  // Added tokens by the first byte of their text, longest first; [0]: raw pass, [1]: normalized.
  std::array<std::array<std::vector<int32_t>, 256>, 2> added_by_byte;
  std::vector<int32_t> eog;

  // Text segments and added tokens: calls plain(begin, end) for text between matches and
  // token(id) for each match, in order. normalized selects the tokens of the second pass.
  void split_added(std::string_view s, bool normalized,
                   const std::function<void(size_t, size_t)>& plain,
                   const std::function<void(int32_t)>& token) const;
  // One raw text segment (between added tokens); at_start: it begins the text.
  void encode_segment(std::string_view raw, bool at_start, std::vector<int32_t>& out) const;
  // SentencePiece-style: the normalized segment's pieces as symbols, then merged.
  std::string spm_normalize(std::string_view s, bool at_start) const;
  void spm_piece(std::string_view piece, bool at_start, std::vector<int32_t>& out) const;
  void spm_symbols(std::string_view piece, std::vector<int32_t>& sym) const;
  void byte_level_piece(std::string_view piece, std::vector<int32_t>& out) const;
  void merge(std::vector<int32_t>& sym) const;
};

}  // namespace nvfp4

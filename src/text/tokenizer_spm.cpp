// SentencePiece-style BPE (HF tokenizers' BPE with byte_fallback, as Llama 2 and Mistral use it):
// spaces become "▁" and a "▁" goes before the segment (normalizer Prepend + Replace, or the
// Metaspace pre-tokenizer), each code point is a symbol (its vocabulary token, else its UTF-8 bytes
// as <0xNN> tokens, else unk), then the merges.
#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace nvfp4 {

namespace {
constexpr std::string_view kMeta = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

std::string spaces_to_meta(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    if (c == ' ') out += kMeta;
    else out += c;
  }
  return out;
}
bool starts_meta(std::string_view s) { return s.substr(0, kMeta.size()) == kMeta; }
}  // namespace

// The normalizer part: Prepend("▁") when the file has it, and spaces to "▁" in every case (the
// normalizer's Replace, or the same done by Metaspace).
std::string Tokenizer::Impl::spm_normalize(std::string_view s, bool) const {
  std::string out = spaces_to_meta(s);
  if (d.space_prefix == "prepend" && !out.empty()) out.insert(0, kMeta);
  return out;
}

// The Metaspace pre-tokenizer's prefix and split, then each piece to symbols and merges.
void Tokenizer::Impl::spm_piece(std::string_view sub, bool at_start, std::vector<int32_t>& out) const {
  std::string s(sub);
  const bool prefix = !starts_meta(s) && (d.space_prefix == "always" || (d.space_prefix == "first" && at_start));
  if (prefix) s.insert(0, kMeta);
  std::vector<std::string_view> pieces;
  const std::string_view v = s;
  if (d.metaspace_split) {
    size_t b = 0;
    for (size_t i = kMeta.size(); i + kMeta.size() <= v.size(); ++i)
      if (v.substr(i, kMeta.size()) == kMeta) {
        if (i > b) pieces.push_back(v.substr(b, i - b));
        b = i;
      }
    if (b < v.size()) pieces.push_back(v.substr(b));
  } else {
    pieces.push_back(v);
  }
  std::vector<int32_t> sym;
  for (std::string_view p : pieces) {
    if (d.ignore_merges) {
      const int32_t id = vocab.find(p);
      if (id >= 0) { out.push_back(id); continue; }
    }
    sym.clear();
    spm_symbols(p, sym);
    merge(sym);
    out.insert(out.end(), sym.begin(), sym.end());
  }
}

void Tokenizer::Impl::spm_symbols(std::string_view piece, std::vector<int32_t>& sym) const {
  bool prev_unk = false;
  for (const unicode::Char& c : unicode::decode_utf8(piece)) {
    const std::string_view ch = piece.substr(c.offset, c.len);
    const int32_t id = vocab.find(ch);
    if (id >= 0) { sym.push_back(id); prev_unk = false; continue; }
    bool all = true;
    for (unsigned char b : ch) all = all && byte_token[b] >= 0;
    if (all) {
      for (unsigned char b : ch) sym.push_back(byte_token[b]);
      prev_unk = false;
      continue;
    }
    if (d.unk < 0) continue;  // no unknown token: the character is dropped, as HF does
    if (!(d.fuse_unk && prev_unk)) sym.push_back(d.unk);
    prev_unk = true;
  }
}

}  // namespace nvfp4

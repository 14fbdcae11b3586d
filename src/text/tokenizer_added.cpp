// Added tokens in the text, as HF tokenizers' AddedVocabulary finds them: leftmost-longest
// matches, left to right; a single_word token only where no word character (regex \w) touches
// it; lstrip / rstrip widen the match over white space (never into the previous match).
#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace nvfp4 {

namespace {

bool is_word(uint32_t cp) { return unicode::is_word(cp); }

// The code point that ends s[0, end), kInvalid if none or not valid UTF-8.
uint32_t last_cp(std::string_view s, size_t end) {
  size_t b = end;
  while (b > 0 && end - b < 4) {
    --b;
    if ((static_cast<uint8_t>(s[b]) & 0xC0) != 0x80) break;
  }
  const auto c = unicode::decode_utf8(s.substr(b, end - b));
  return c.empty() ? unicode::kInvalid : c.back().cp;
}
uint32_t first_cp(std::string_view s, size_t begin) {
  const auto c = unicode::decode_utf8(s.substr(begin, std::min<size_t>(4, s.size() - begin)));
  return c.empty() ? unicode::kInvalid : c.front().cp;
}
size_t cp_len(std::string_view s, size_t begin) {
  const auto c = unicode::decode_utf8(s.substr(begin, std::min<size_t>(4, s.size() - begin)));
  return c.empty() ? 1 : c.front().len;
}

}  // namespace

void Tokenizer::Impl::split_added(std::string_view s, bool normalized,
                                  const std::function<void(size_t, size_t)>& plain,
                                  const std::function<void(int32_t)>& token) const {
  const auto& index = added_by_byte[normalized ? 1 : 0];
  size_t start = 0, i = 0;
  while (i < s.size()) {
    int32_t hit = -1;
    for (int32_t id : index[static_cast<uint8_t>(s[i])]) {
      const std::string_view t = vocab.token(id);
      if (s.substr(i, t.size()) == t) { hit = id; break; }
    }
    if (hit < 0) { ++i; continue; }
    const AddedToken* a = nullptr;
    for (const AddedToken& x : added)
      if (x.id == hit && x.normalized == normalized) { a = &x; break; }
    size_t b = i, e = i + vocab.token(hit).size();
    if (a && a->single_word) {
      const bool left_ok = b == 0 || !is_word(last_cp(s, b));
      const bool right_ok = e == s.size() || !is_word(first_cp(s, e));
      if (!left_ok || !right_ok) { i = e; continue; }  // the match stays plain text
    }
    if (a && a->lstrip)
      while (b > start && unicode::is_whitespace(last_cp(s, b))) {
        size_t k = b - 1;
        while (k > start && (static_cast<uint8_t>(s[k]) & 0xC0) == 0x80) --k;
        b = k;
      }
    if (a && a->rstrip)
      while (e < s.size() && unicode::is_whitespace(first_cp(s, e))) e += cp_len(s, e);
    if (b > start) plain(start, b);
    token(hit);
    i = start = e;
  }
  if (start < s.size()) plain(start, s.size());
}

}  // namespace nvfp4

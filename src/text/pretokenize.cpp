// The GPT-2 regex matched by hand. At every position exactly one alternative applies (every code
// point is a letter, a number, white space or "other"), tried in the regex's order:
//   1. 's 't 're 've 'm 'll 'd  (ASCII apostrophe, lower case, case-sensitive)
//   2. an optional U+0020 then a run of letters
//   3. an optional U+0020 then a run of numbers
//   4. an optional U+0020 then a run of code points that are none of white space, letter, number
//   5. a white-space run: all of it at the end of the text; else all but its last code point
//      (\s+(?!\S)), or the single code point when the run has length 1 (the \s+ fallback)
#include "text/pretokenize.h"

#include "text/unicode.h"

namespace nvfp4 {

pretok::Cls pretok::classify(uint32_t cp) {
  if (cp == unicode::kInvalid) return kOther;
  if (unicode::is_whitespace(cp)) return kSpace;
  if (unicode::is_letter(cp)) return kLetter;
  if (unicode::is_number(cp)) return kNumber;
  return kOther;
}

namespace {

using unicode::Char;
using namespace pretok;

// Length (in Chars) of the gpt2 match starting at i; i < n.
size_t gpt2_match(const std::vector<Char>& c, const std::vector<Cls>& k, size_t i, size_t n) {
  auto cp = [&](size_t j) { return j < n ? c[j].cp : 0u; };
  if (cp(i) == '\'') {
    const uint32_t a = cp(i + 1), b = cp(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  const size_t j = (cp(i) == ' ' && i + 1 < n) ? i + 1 : i;
  for (Cls want : {kLetter, kNumber, kOther}) {
    if (k[j] != want) continue;
    // With the optional space taken, the run starts at j; without it (j == i) likewise.
    size_t e = j;
    while (e < n && k[e] == want) ++e;
    return e - i;
  }
  if (k[i] == kSpace) {
    size_t e = i;
    while (e < n && k[e] == kSpace) ++e;
    if (e == n) return e - i;
    return e - i > 1 ? e - i - 1 : 1;
  }
  // A space followed by nothing matching: ' ' is white space, so the branch above took it.
  return 1;
}

void split_gpt2(const std::vector<Char>& c, const std::vector<Cls>& k, size_t begin, size_t end,
                std::vector<std::pair<uint32_t, uint32_t>>& out) {
  size_t i = begin;
  while (i < end) {
    // Matching on the sub-range [begin, end): positions past `end` do not exist for the regex.
    const size_t len = gpt2_match(c, k, i, end);
    const size_t e = i + len;
    out.emplace_back(c[i].offset, c[e - 1].offset + c[e - 1].len);
    i = e;
  }
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> pretokenize(std::string_view text, PreTokenizer kind) {
  const std::vector<Char> c = unicode::decode_utf8(text);
  std::vector<Cls> k(c.size());
  for (size_t i = 0; i < c.size(); ++i) k[i] = classify(c[i].cp);
  std::vector<std::pair<uint32_t, uint32_t>> out;
  if (kind == PreTokenizer::gpt2) {
    split_gpt2(c, k, 0, c.size(), out);
    return out;
  }
  if (kind == PreTokenizer::deepseek3) {
    split_deepseek3(c, out);
    return out;
  }
  if (kind == PreTokenizer::llama3 || kind == PreTokenizer::qwen2) {
    const size_t digits = kind == PreTokenizer::llama3 ? 3 : 1;
    for (size_t i = 0; i < c.size();) {
      const size_t e = i + llama3_match(c, k, i, c.size(), digits);
      out.emplace_back(c[i].offset, c[e - 1].offset + c[e - 1].len);
      i = e;
    }
    return out;
  }
  size_t start = 0;
  for (size_t i = 0; i <= c.size(); ++i) {
    if (i < c.size() && k[i] != kNumber) continue;
    split_gpt2(c, k, start, i, out);
    if (i < c.size()) out.emplace_back(c[i].offset, c[i].offset + c[i].len);
    start = i + 1;
  }
  return out;
}

}  // namespace nvfp4

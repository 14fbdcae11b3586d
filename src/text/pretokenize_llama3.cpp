// The Llama 3 / Qwen2 Split regex matched by hand, alternatives tried in the regex's order at each
// position (leftmost-first alternation, greedy quantifiers, as Oniguruma runs it in `tokenizers`):
//   1. (?i:'s|'t|'re|'ve|'m|'ll|'d)   ASCII apostrophe; case-insensitive (U+017F ſ folds to s)
//   2. [^\r\n\p{L}\p{N}]?\p{L}+        one optional code point that is none of CR, LF, letter,
//                                      number (a space, a tab, punctuation...), then letters
//   3. \p{N}{1,max_digits}
//   4. ' '?[^\s\p{L}\p{N}]+[\r\n]*     an optional U+0020, "other" code points, then CR/LF
//   5. \s*[\r\n]+                      a white-space run up to its last CR or LF
//   6. \s+(?!\S)                       a white-space run: all of it at the end of the text, else
//                                      all but its last code point
//   7. \s+                             (a run of one code point before non-space)
#include "text/pretokenize.h"

namespace nvfp4::pretok {

namespace {
bool is_crlf(uint32_t cp) { return cp == '\r' || cp == '\n'; }
uint32_t fold(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp == 0x17F) return 's';  // LATIN SMALL LETTER LONG S case-folds to s
  return cp;
}
}  // namespace

size_t llama3_match(const std::vector<unicode::Char>& c, const std::vector<Cls>& k, size_t i,
                    size_t n, size_t max_digits) {
  auto cp = [&](size_t j) { return j < n ? c[j].cp : 0u; };
  // 1. contractions
  if (cp(i) == '\'' && i + 1 < n) {
    const uint32_t a = fold(cp(i + 1));
    const uint32_t b = i + 2 < n ? fold(cp(i + 2)) : 0u;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  // 2. letters with one optional leading non-letter, non-number, non-CR/LF code point
  {
    size_t j = i;
    if (k[i] != kLetter && k[i] != kNumber && !is_crlf(cp(i))) j = i + 1;
    if (j < n && k[j] == kLetter) {
      size_t e = j;
      while (e < n && k[e] == kLetter) ++e;
      return e - i;
    }
  }
  // 3. numbers
  if (k[i] == kNumber) {
    size_t e = i;
    while (e < n && e - i < max_digits && k[e] == kNumber) ++e;
    return e - i;
  }
  // 4. optional space, "other" run, CR/LF run
  {
    const size_t j = (cp(i) == ' ' && i + 1 < n) ? i + 1 : i;
    if (k[j] == kOther) {
      size_t e = j;
      while (e < n && k[e] == kOther) ++e;
      while (e < n && is_crlf(cp(e))) ++e;
      return e - i;
    }
  }
  // Only white space is left at i.
  size_t e = i;
  while (e < n && k[e] == kSpace) ++e;
  // 5. up to the last CR/LF of the run
  for (size_t j = e; j > i; --j)
    if (is_crlf(cp(j - 1))) return j - i;
  // 6. and 7.
  if (e == n) return e - i;
  return e - i > 1 ? e - i - 1 : 1;
}

}  // namespace nvfp4::pretok

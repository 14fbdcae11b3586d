// DeepSeek V3's pre-tokenizer matched by hand: three Split(Isolated) steps, each on the pieces of
// the one before (the matches and the text between them are pieces):
//   1. \p{N}{1,3}
//   2. [一-龥぀-ゟ゠-ヿ]+                     (U+4E00..U+9FA5, U+3040..U+309F, U+30A0..U+30FF)
//   3. a. [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+   ASCII punctuation, ASCII letters
//      b. [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+            optional lead, letters and marks
//      c. ' '?[\p{P}\p{S}]+[\r\n]*
//      d. \s*[\r\n]+   e. \s+(?!\S)   f. \s+              (as in Llama 3's regex)
//      tried in this order at each position; where none matches the text is a piece of its own.
#include "text/pretokenize.h"

namespace nvfp4::pretok {

namespace {

using unicode::Char;

bool is_crlf(uint32_t cp) { return cp == '\r' || cp == '\n'; }
bool ascii_punct(uint32_t cp) {
  return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
         (cp >= 0x7B && cp <= 0x7E);
}
bool ascii_letter(uint32_t cp) { return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z'; }
bool cjk(uint32_t cp) { return (cp >= 0x4E00 && cp <= 0x9FA5) || (cp >= 0x3040 && cp <= 0x30FF); }
bool ps(uint32_t cp) { return unicode::is_punct(cp) || unicode::is_symbol(cp); }
bool lm(uint32_t cp) { return unicode::is_letter(cp) || unicode::is_mark(cp); }
bool lead(uint32_t cp) { return !is_crlf(cp) && !unicode::is_letter(cp) && !ps(cp); }

// Length of step 3's match at i within [i, n), 0 if none.
size_t match3(const std::vector<Char>& c, size_t i, size_t n) {
  auto cp = [&](size_t j) { return c[j].cp; };
  auto run = [&](size_t j, bool (*f)(uint32_t)) {
    while (j < n && f(cp(j))) ++j;
    return j;
  };
  if (ascii_punct(cp(i)) && i + 1 < n && ascii_letter(cp(i + 1))) return run(i + 1, ascii_letter) - i;
  if (lead(cp(i)) && i + 1 < n && lm(cp(i + 1))) return run(i + 1, lm) - i;
  if (lm(cp(i))) return run(i, lm) - i;
  {
    const size_t j = cp(i) == ' ' && i + 1 < n && ps(cp(i + 1)) ? i + 1 : i;
    if (ps(cp(j))) return run(run(j, ps), is_crlf) - i;
  }
  if (!unicode::is_whitespace(cp(i))) return 0;
  const size_t e = run(i, unicode::is_whitespace);
  for (size_t j = e; j > i; --j)
    if (is_crlf(cp(j - 1))) return j - i;
  if (e == n) return e - i;
  return e - i > 1 ? e - i - 1 : 1;
}

using Out = std::vector<std::pair<uint32_t, uint32_t>>;

void emit(const std::vector<Char>& c, size_t b, size_t e, Out& out) {
  if (e > b) out.emplace_back(c[b].offset, c[e - 1].offset + c[e - 1].len);
}

void step3(const std::vector<Char>& c, size_t b, size_t e, Out& out) {
  size_t p = b;
  while (p < e) {
    size_t i = p, len = 0;
    while (i < e && (len = match3(c, i, e)) == 0) ++i;
    emit(c, p, i, out);
    if (i == e) break;
    emit(c, i, i + len, out);
    p = i + len;
  }
}

void step2(const std::vector<Char>& c, size_t b, size_t e, Out& out) {
  size_t p = b;
  for (size_t i = b; i < e;) {
    if (!cjk(c[i].cp)) { ++i; continue; }
    size_t j = i;
    while (j < e && cjk(c[j].cp)) ++j;
    step3(c, p, i, out);
    step3(c, i, j, out);
    p = i = j;
  }
  step3(c, p, e, out);
}

}  // namespace

void split_deepseek3(const std::vector<Char>& c, Out& out) {
  size_t p = 0;
  for (size_t i = 0; i < c.size();) {
    if (!unicode::is_number(c[i].cp)) { ++i; continue; }
    size_t j = i;
    while (j < c.size() && j - i < 3 && unicode::is_number(c[j].cp)) ++j;
    step2(c, p, i, out);
    step2(c, i, j, out);
    p = i = j;
  }
  step2(c, p, c.size(), out);
}

}  // namespace nvfp4::pretok

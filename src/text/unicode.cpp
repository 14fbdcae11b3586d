#include "text/unicode.h"

#include <algorithm>
#include <string>

namespace nvfp4::unicode {

std::vector<Char> decode_utf8(std::string_view s) {
  std::vector<Char> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t b = p[i];
    uint32_t len = 0, cp = 0, min = 0;
    if (b < 0x80) { len = 1; cp = b; }
    else if ((b & 0xE0) == 0xC0) { len = 2; cp = b & 0x1F; min = 0x80; }
    else if ((b & 0xF0) == 0xE0) { len = 3; cp = b & 0x0F; min = 0x800; }
    else if ((b & 0xF8) == 0xF0) { len = 4; cp = b & 0x07; min = 0x10000; }
    bool ok = len != 0 && i + len <= n;
    for (uint32_t k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      else cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (ok && len > 1 && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (!ok) {
      out.push_back({kInvalid, static_cast<uint32_t>(i), 1});
      ++i;
      continue;
    }
    out.push_back({cp, static_cast<uint32_t>(i), len});
    i += len;
  }
  return out;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {
bool in_ranges(const CodepointRange* r, size_t count, uint32_t cp) {
  const CodepointRange* end = r + count;
  const CodepointRange* it =
      std::upper_bound(r, end, cp, [](uint32_t v, const CodepointRange& x) { return v < x.first; });
  return it != r && cp <= (it - 1)->last;
}
}  // namespace

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return cp != kInvalid && in_ranges(kLetterRanges, kLetterRanges_count, cp);
}

bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return cp != kInvalid && in_ranges(kNumberRanges, kNumberRanges_count, cp);
}

bool is_mark(uint32_t cp) { return cp != kInvalid && in_ranges(kMarkRanges, kMarkRanges_count, cp); }
bool is_punct(uint32_t cp) { return cp != kInvalid && in_ranges(kPunctRanges, kPunctRanges_count, cp); }
bool is_symbol(uint32_t cp) { return cp != kInvalid && in_ranges(kSymbolRanges, kSymbolRanges_count, cp); }

bool is_word(uint32_t cp) {
  if (cp < 0x80) return is_letter(cp) || is_number(cp) || cp == '_';
  return cp == 0x200C || cp == 0x200D || is_letter(cp) || is_mark(cp) ||
         (cp != kInvalid && in_ranges(kWordExtraRanges, kWordExtraRanges_count, cp));
}

bool is_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

}  // namespace nvfp4::unicode

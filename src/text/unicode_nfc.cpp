// NFC by the Unicode algorithm over the generated tables (unicode_nfc_tables.cpp): full canonical
// decomposition (Hangul by arithmetic), stable sort of each run of non-starters by combining
// class, then canonical composition (a character joins the last starter unless blocked).
#include "text/unicode_nfc.h"

#include <algorithm>
#include <vector>

#include "text/unicode.h"

namespace nvfp4::unicode {

namespace {
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;
constexpr uint32_t kRawByte = 0x80000000u;  // an invalid byte kept as is: ccc 0, never composes

uint8_t ccc(uint32_t cp) { return (cp & kRawByte) ? 0 : combining_class(cp); }

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* end = kDecompositions + kDecompositions_count;
  const Decomposition* it = std::lower_bound(kDecompositions, end, cp,
                                             [](const Decomposition& d, uint32_t v) { return d.cp < v; });
  if (it != end && it->cp == cp) out.insert(out.end(), kDecompData + it->offset, kDecompData + it->offset + it->len);
  else out.push_back(cp);
}

uint32_t compose(uint32_t a, uint32_t b) {
  if ((a | b) & kRawByte) return 0;
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const Composition* end = kCompositions + kCompositions_count;
  const Composition* it = std::lower_bound(kCompositions, end, std::make_pair(a, b),
                                           [](const Composition& c, const std::pair<uint32_t, uint32_t>& v) {
                                             return c.first != v.first ? c.first < v.first : c.second < v.second;
                                           });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}
}  // namespace

uint8_t combining_class(uint32_t cp) {
  const CccRange* end = kCccRanges + kCccRanges_count;
  const CccRange* it = std::upper_bound(kCccRanges, end, cp, [](uint32_t v, const CccRange& r) { return v < r.first; });
  return it != kCccRanges && cp <= (it - 1)->last ? (it - 1)->ccc : 0;
}

std::string nfc(std::string_view s) {
  const std::vector<Char> chars = decode_utf8(s);
  bool trivial = true;  // below U+0300 nothing decomposes, reorders or composes
  for (const Char& c : chars) trivial = trivial && (c.cp < 0x300);
  if (trivial) return std::string(s);
  std::vector<uint32_t> d;
  d.reserve(chars.size() + 8);
  for (const Char& c : chars) {
    if (c.cp == kInvalid) d.push_back(kRawByte | static_cast<uint8_t>(s[c.offset]));
    else decompose(c.cp, d);
  }
  // Canonical ordering: each run of non-starters, stably by class.
  for (size_t i = 0; i < d.size();) {
    if (ccc(d[i]) == 0) { ++i; continue; }
    size_t e = i;
    while (e < d.size() && ccc(d[e]) != 0) ++e;
    std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(e),
                     [](uint32_t a, uint32_t b) { return ccc(a) < ccc(b); });
    i = e;
  }
  // Canonical composition.
  if (!d.empty()) {
    size_t starter = 0, w = 1;
    int last = ccc(d[0]) == 0 ? 0 : 256;
    for (size_t i = 1; i < d.size(); ++i) {
      const uint32_t c = d[i];
      const int cc = ccc(c);
      const uint32_t comp = last == 256 ? 0 : compose(d[starter], c);
      if (comp != 0 && (last < cc || last == 0)) {
        d[starter] = comp;
        continue;
      }
      if (cc == 0) starter = w;
      last = cc;
      d[w++] = c;
    }
    d.resize(w);
  }
  std::string out;
  out.reserve(s.size());
  for (uint32_t c : d) {
    if (c & kRawByte) out += static_cast<char>(c & 0xFF);
    else append_utf8(c, out);
  }
  return out;
}

}  // namespace nvfp4::unicode

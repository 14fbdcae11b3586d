// The few Unicode facts the BPE pre-tokenizer needs: UTF-8 decoding that never fails (an invalid
// byte becomes a code point of its own, so every input byte round-trips) and the classes \p{L},
// \p{N} and \s (White_Space) by table look-up.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace nvfp4::unicode {

struct CodepointRange {
  uint32_t first, last;  // inclusive
};
extern const char* const kUnicodeVersion;
extern const CodepointRange kLetterRanges[];
extern const size_t kLetterRanges_count;
extern const CodepointRange kNumberRanges[];
extern const size_t kNumberRanges_count;
extern const CodepointRange kMarkRanges[];
extern const size_t kMarkRanges_count;
extern const CodepointRange kPunctRanges[];
extern const size_t kPunctRanges_count;
extern const CodepointRange kSymbolRanges[];
extern const size_t kSymbolRanges_count;
extern const CodepointRange kWordExtraRanges[];  // Nd, Nl, Pc
extern const size_t kWordExtraRanges_count;

// A decoded code point and the bytes it came from.
struct Char {
  uint32_t cp;         // kInvalid for a byte that is not part of valid UTF-8
  uint32_t offset;     // byte offset in the input
  uint32_t len;        // bytes (1..4)
};
inline constexpr uint32_t kInvalid = 0xFFFFFFFFu;

// Decodes UTF-8; overlong forms, surrogates, code points past U+10FFFF and truncated sequences
// yield one kInvalid Char per offending byte.
std::vector<Char> decode_utf8(std::string_view s);
// Appends the UTF-8 encoding of cp (cp <= 0x10FFFF).
void append_utf8(uint32_t cp, std::string& out);

bool is_letter(uint32_t cp);      // general category L*
bool is_number(uint32_t cp);      // general category N*
bool is_whitespace(uint32_t cp);  // the White_Space property (what \s matches)
bool is_mark(uint32_t cp);        // general category M*
bool is_punct(uint32_t cp);       // general category P*
bool is_symbol(uint32_t cp);      // general category S*
bool is_word(uint32_t cp);        // regex \w: L, M, Nd, Nl, Pc, U+200C, U+200D

}  // namespace nvfp4::unicode

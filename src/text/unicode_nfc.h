// Unicode NFC (canonical decomposition, canonical ordering, canonical composition), as the `NFC`
// normalizer of HF tokenizers applies it. Bytes that are not valid UTF-8 are kept as they are and
// block composition across them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nvfp4::unicode {

struct CccRange { uint32_t first, last; uint8_t ccc; };
struct Decomposition { uint32_t cp; uint32_t offset; uint8_t len; };
struct Composition { uint32_t first, second, composite; };
extern const char* const kNfcUnicodeVersion;
extern const CccRange kCccRanges[];
extern const size_t kCccRanges_count;
extern const uint32_t kDecompData[];
extern const Decomposition kDecompositions[];
extern const size_t kDecompositions_count;
extern const Composition kCompositions[];
extern const size_t kCompositions_count;

uint8_t combining_class(uint32_t cp);
std::string nfc(std::string_view s);

}  // namespace nvfp4::unicode

// A pushdown checker of JSON text against a Grammar (json_schema.h), fed a byte at a time: it
// takes a byte only when the text so far stays a prefix of some document the grammar admits, so
// every text it has taken can still be completed (apart from strings' and arrays' minimum lengths,
// which the bytes that close them wait for). Constrained decoding masks every token whose bytes
// it refuses (token_mask.h).
//
// The text is compact or spaced JSON: a run of whitespace is at most one newline then spaces or
// tabs, kMaxSpaces bytes in all; none between a key and its colon, before a comma, or after the
// document; after an object's or array's value only where it may close (pretty-printed JSON). anyOf keeps one stack per branch that still takes the text (at most
// kMaxAlternatives; the ones beyond are dropped, which only ever refuses more). Keys of an object
// come in any order, each at most once; numbers have at most kMaxNumberBytes bytes. Strings are
// checked as UTF-8 (no overlong forms, no surrogates, no raw control bytes; a \u escape of a
// surrogate is refused, so that each escape is one code point for minLength/maxLength). Keys are
// matched byte for byte against the property names and take no escapes.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "server/json_schema.h"

namespace nvfp4::server {

class JsonChecker {
 public:
  static constexpr int kMaxSpaces = 16;
  static constexpr int kMaxAlternatives = 64;
  static constexpr int kMaxNumberBytes = 24;

  explicit JsonChecker(std::shared_ptr<const Grammar> g);
  // Whether c continues the text; when not, the checker is spent (copy it before trying).
  bool feed(uint8_t c);
  bool feed(std::string_view s);
  // The text is a whole document: the generation may end here.
  bool accepting() const;
  // The text is a whole document that nothing may follow: the generation ends here.
  bool done() const;
  // Some branch is inside a marker (the grammar's prefix or suffix): special tokens may match.
  bool in_marker() const;
  // Every branch is inside a string value of any length, between characters: bytes without a
  // quote that end where a character ends leave it so, whatever holds the string (token_mask.h).
  bool in_free_string() const;
  // Copies o's state into this one, reusing this one's memory (the mask's search copies a lot).
  void assign(const JsonChecker& o);

  struct Frame {
    enum Kind : uint8_t { Value, Object, Array, String, Number, Literal } kind = Value;
    uint8_t st = 0;      // the kind's state
    uint8_t flags = 0;   // String: key; Literal: marker
    int32_t node = 0;    // schema node (String key: the object's)
    int32_t aux = 0;     // Object: current property (-1: another key); String: UTF-8 / \u state
    int64_t n = 0;       // Array: items; String: code points (key: bytes); Number, Literal: bytes
    uint64_t mask = 0;   // Object: properties seen; key String: names still matching; Literal: values still matching
  };

 private:
  struct Stack {
    std::vector<Frame> frames;
    int spaces = 0;  // whitespace bytes in a row
  };
  // Takes c on one stack; anyOf branches met on the way are pushed to `spawned` (not yet fed c).
  bool step(Stack& s, uint8_t c, std::vector<Stack>& spawned) const;
  bool value_start(Stack& s, uint8_t c) const;
  bool string_byte(Stack& s, Frame& f, uint8_t c) const;
  bool key_closed(Stack& s) const;
  void value_done(Stack& s) const;
  bool literal_final(const Frame& f) const;
  static bool stack_accepting(const Stack& s, const Grammar& g);

  std::shared_ptr<const Grammar> g_;
  std::vector<Stack> alts_;
  size_t n_ = 0;  // alts_[0, n_) are live
};

}  // namespace nvfp4::server

// The pushdown checker (see json_checker.h). A stack's top frame is the value being written; a
// value that ends pops its frame and tells its parent (value_done). Numbers and literals that may
// go on (12 after 1) end at the first byte that does not continue them, which the parent then takes.
#include "server/json_checker.h"

namespace nvfp4::server {
namespace {

using Frame = JsonChecker::Frame;

constexpr uint8_t kKey = 1, kMarker = 1;

bool is_space(uint8_t c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// A run of whitespace: one newline at its start at most, then spaces or tabs, kMaxSpaces in all
// (small models left free write newlines until max_tokens).
bool take_space(int& spaces, uint8_t c) {
  if (c == '\r' || (c == '\n' && spaces != 0) || spaces >= JsonChecker::kMaxSpaces) return false;
  ++spaces;
  return true;
}
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
uint64_t low_bits(size_t n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// Number states: 0 start, 1 after '-', 2 after a leading 0, 3 integer digits, 4 after '.', 5
// fraction digits, 6 after e, 7 after the exponent's sign, 8 exponent digits.
bool number_final(uint8_t st) { return st == 2 || st == 3 || st == 5 || st == 8; }

int next_number_state(uint8_t st, uint8_t c, bool integer_only) {
  const bool d = is_digit(c);
  switch (st) {
    case 0: return c == '-' ? 1 : c == '0' ? 2 : d ? 3 : -1;
    case 1: return c == '0' ? 2 : d ? 3 : -1;
    case 2:
    case 3:
      if (st == 3 && d) return 3;
      if (integer_only) return -1;
      return c == '.' ? 4 : (c == 'e' || c == 'E') ? 6 : -1;
    case 4: return d ? 5 : -1;
    case 5: return d ? 5 : (c == 'e' || c == 'E') ? 6 : -1;
    case 6: return (c == '+' || c == '-') ? 7 : d ? 8 : -1;
    case 7:
    case 8: return d ? 8 : -1;
    default: return -1;
  }
}

Frame make(Frame::Kind k, int32_t node) {
  Frame f;
  f.kind = k;
  f.node = node;
  return f;
}

}  // namespace

JsonChecker::JsonChecker(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  Stack s;
  if (g_->suffix >= 0) {
    Frame f = make(Frame::Literal, g_->suffix);
    f.flags = kMarker;
    f.mask = 1;
    s.frames.push_back(f);
  }
  s.frames.push_back(make(Frame::Value, g_->root));
  if (g_->prefix >= 0) {
    Frame f = make(Frame::Literal, g_->prefix);
    f.flags = kMarker;
    f.mask = 1;
    s.frames.push_back(f);
  }
  alts_.push_back(std::move(s));
  n_ = 1;
}

void JsonChecker::assign(const JsonChecker& o) {
  if (g_ != o.g_) g_ = o.g_;
  if (alts_.size() < o.n_) alts_.resize(o.n_);
  for (size_t i = 0; i < o.n_; ++i) {
    alts_[i].frames = o.alts_[i].frames;
    alts_[i].spaces = o.alts_[i].spaces;
  }
  n_ = o.n_;
}

bool JsonChecker::feed(std::string_view s) {
  for (char c : s)
    if (!feed(static_cast<uint8_t>(c))) return false;
  return true;
}

bool JsonChecker::feed(uint8_t c) {
  std::vector<Stack> spawned;  // anyOf's other branches, met while taking c
  size_t w = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (step(alts_[i], c, spawned)) {
      if (w != i) std::swap(alts_[w], alts_[i]);
      ++w;
    }
  }
  while (!spawned.empty()) {
    Stack st = std::move(spawned.back());
    spawned.pop_back();
    if (step(st, c, spawned) && w < static_cast<size_t>(kMaxAlternatives)) {
      if (w < alts_.size()) alts_[w] = std::move(st);
      else alts_.push_back(std::move(st));
      ++w;
    }
  }
  n_ = w;
  return w > 0;
}

bool JsonChecker::literal_final(const Frame& f) const {
  const auto& lits = g_->nodes[static_cast<size_t>(f.node)].literals;
  for (size_t i = 0; i < lits.size(); ++i)
    if ((f.mask >> i & 1) && static_cast<int64_t>(lits[i].size()) == f.n) return true;
  return false;
}

bool JsonChecker::stack_accepting(const Stack& s, const Grammar& g) {
  if (s.frames.empty()) return true;
  if (s.frames.size() != 1) return false;
  const Frame& f = s.frames.back();
  if (f.kind == Frame::Number) return number_final(f.st);
  if (f.kind == Frame::Literal && !(f.flags & kMarker)) {
    const auto& lits = g.nodes[static_cast<size_t>(f.node)].literals;
    for (size_t i = 0; i < lits.size(); ++i)
      if ((f.mask >> i & 1) && static_cast<int64_t>(lits[i].size()) == f.n) return true;
  }
  return false;
}

bool JsonChecker::accepting() const {
  for (size_t i = 0; i < n_; ++i)
    if (stack_accepting(alts_[i], *g_)) return true;
  return false;
}

bool JsonChecker::done() const {
  for (size_t i = 0; i < n_; ++i)
    if (alts_[i].frames.empty()) return true;
  return false;
}

bool JsonChecker::in_marker() const {
  for (size_t i = 0; i < n_; ++i) {
    const auto& fr = alts_[i].frames;
    if (!fr.empty() && fr.back().kind == Frame::Literal && (fr.back().flags & kMarker)) return true;
  }
  return false;
}

bool JsonChecker::in_free_string() const {
  if (n_ == 0) return false;
  for (size_t i = 0; i < n_; ++i) {
    const auto& fr = alts_[i].frames;
    if (fr.empty()) return false;
    const Frame& f = fr.back();
    if (f.kind != Frame::String || (f.flags & kKey) || f.st != 0) return false;
    const SchemaNode& nd = g_->nodes[static_cast<size_t>(f.node)];
    if (nd.max_length >= 0 || nd.min_length > 0) return false;
  }
  return true;
}

void JsonChecker::value_done(Stack& s) const {
  if (s.frames.empty()) return;
  Frame& p = s.frames.back();
  if (p.kind == Frame::Object && p.st == 2) p.st = 3;
  if (p.kind == Frame::Array && p.st == 2) {
    p.n += 1;
    p.st = 3;
  }
}

bool JsonChecker::value_start(Stack& s, uint8_t c) const {
  Frame& f = s.frames.back();
  const SchemaNode& nd = g_->nodes[static_cast<size_t>(f.node)];
  if (nd.has_literals) {
    f.kind = Frame::Literal;
    f.mask = low_bits(nd.literals.size());
    f.n = 0;
    return false;  // not taken yet: the literal takes c
  }
  const uint16_t t = nd.types;
  if (c == '{' && (t & kTypeObject)) {
    f.kind = Frame::Object;
    f.st = 0;
    f.mask = 0;
    return true;
  }
  if (c == '[' && (t & kTypeArray)) {
    f.kind = Frame::Array;
    f.st = 0;
    f.n = 0;
    return true;
  }
  if (c == '"' && (t & kTypeString)) {
    f.kind = Frame::String;
    f.st = 0;
    f.n = 0;
    return true;
  }
  if ((c == '-' || is_digit(c)) && (t & (kTypeNumber | kTypeInteger))) {
    f.kind = Frame::Number;
    f.st = 0;
    f.n = 0;
    return false;
  }
  if ((c == 't' || c == 'f') && (t & kTypeBoolean)) {
    f = make(Frame::Literal, kBoolNode);
    f.mask = 3;
    return false;
  }
  if (c == 'n' && (t & kTypeNull)) {
    f = make(Frame::Literal, kNullNode);
    f.mask = 1;
    return false;
  }
  f.kind = Frame::Kind(255);  // refused: the caller reads this as "no"
  return false;
}

bool JsonChecker::key_closed(Stack& s) const {
  const Frame key = s.frames.back();
  s.frames.pop_back();
  Frame& o = s.frames.back();
  const SchemaNode& nd = g_->nodes[static_cast<size_t>(o.node)];
  int32_t match = -1;
  for (size_t i = 0; i < nd.prop_names.size(); ++i)
    if ((key.mask >> i & 1) && static_cast<int64_t>(nd.prop_names[i].size()) == key.n) match = static_cast<int32_t>(i);
  if (match >= 0) {
    if (o.mask >> match & 1) return false;  // a key at most once
    o.mask |= uint64_t{1} << match;
  } else if (nd.additional < 0) {
    return false;
  }
  o.aux = match;
  o.st = 1;
  return true;
}

bool JsonChecker::string_byte(Stack& s, Frame& f, uint8_t c) const {
  const bool key = f.flags & kKey;
  const SchemaNode& nd = g_->nodes[static_cast<size_t>(f.node)];
  const int64_t max_len = key ? -1 : nd.max_length;
  if (key && c != '"') {
    // Keys are matched byte for byte against the property names.
    if (c == '\\' || c < 0x20) return false;
    uint64_t m = 0;
    for (size_t i = 0; i < nd.prop_names.size(); ++i)
      if ((f.mask >> i & 1) && static_cast<int64_t>(nd.prop_names[i].size()) > f.n &&
          static_cast<uint8_t>(nd.prop_names[i][static_cast<size_t>(f.n)]) == c)
        m |= uint64_t{1} << i;
    if (m == 0 && nd.additional < 0) return false;
    f.mask = m;
  }
  switch (f.st) {
    case 0:
      if (c == '"') {
        if (key) return key_closed(s);
        if (f.n < nd.min_length) return false;
        s.frames.pop_back();
        value_done(s);
        return true;
      }
      if (c < 0x20) return false;
      if (!key && max_len >= 0 && f.n >= max_len) return false;
      if (c == '\\') {
        f.st = 1;
        return true;
      }
      if (c >= 0x80) {
        int rem = 0;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) rem = 1;
        else if (c == 0xE0) rem = 2, lo = 0xA0;
        else if (c == 0xED) rem = 2, hi = 0x9F;
        else if (c >= 0xE1 && c <= 0xEF) rem = 2;
        else if (c == 0xF0) rem = 3, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3) rem = 3;
        else if (c == 0xF4) rem = 3, hi = 0x8F;
        else return false;
        f.aux = rem | (lo << 8) | (hi << 16);
        f.st = 6;
      }
      f.n += 1;  // keys: bytes; values: code points
      return true;
    case 1:
      if (c == 'u') {
        f.st = 2;
        f.aux = 0;
        return true;
      }
      if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' && c != 't') return false;
      f.st = 0;
      f.n += 1;
      return true;
    case 2:
    case 3:
    case 4:
    case 5:
      if (!is_hex(c)) return false;
      if (f.st == 2) f.aux = (c == 'd' || c == 'D') ? 1 : 0;
      if (f.st == 3 && f.aux == 1 && (c >= '8' || !is_digit(c))) return false;  // \uD800-\uDFFF
      if (f.st == 5) {
        f.st = 0;
        f.n += 1;
      } else {
        f.st += 1;
      }
      return true;
    case 6: {
      const int rem = f.aux & 0xFF, lo = (f.aux >> 8) & 0xFF, hi = (f.aux >> 16) & 0xFF;
      if (c < lo || c > hi) return false;
      if (key) f.n += 1;
      if (rem == 1) f.st = 0;
      else f.aux = (rem - 1) | (0x80 << 8) | (0xBF << 16);
      return true;
    }
    default: return false;
  }
}

bool JsonChecker::step(Stack& s, uint8_t c, std::vector<Stack>& spawned) const {
  for (int guard = 0; guard < 256; ++guard) {
    if (s.frames.empty()) return false;  // nothing follows the document
    Frame& f = s.frames.back();
    const bool space = is_space(c);
    switch (f.kind) {
      case Frame::Value: {
        if (space) return take_space(s.spaces, c);
        s.spaces = 0;
        const SchemaNode* nd = &g_->nodes[static_cast<size_t>(f.node)];
        if (!nd->any_of.empty()) {
          for (size_t b = 1; b < nd->any_of.size(); ++b) {
            Stack copy = s;
            copy.frames.back().node = nd->any_of[b];
            spawned.push_back(std::move(copy));
          }
          f.node = nd->any_of[0];
          continue;
        }
        if (value_start(s, c)) return true;
        if (s.frames.back().kind == Frame::Kind(255)) return false;
        continue;  // a number or literal takes c
      }
      case Frame::Object: {
        const SchemaNode& nd = g_->nodes[static_cast<size_t>(f.node)];
        const uint64_t all = low_bits(nd.prop_names.size());
        const bool key_left = nd.additional >= 0 || (all & ~f.mask) != 0;
        const bool can_close = (nd.required & ~f.mask) == 0;
        // No space between a key and its colon nor before a comma: after a value, spaces come
        // before '}' only (so only where the object may close).
        if (space) return f.st != 1 && (f.st != 3 || can_close) && take_space(s.spaces, c);
        const bool spaced = s.spaces > 0;
        s.spaces = 0;
        if ((f.st == 0 || f.st == 4) && c == '"' && key_left) {
          Frame k = make(Frame::String, f.node);
          k.flags = kKey;
          k.mask = nd.additional >= 0 ? all : (all & ~f.mask);
          s.frames.push_back(k);
          return true;
        }
        if ((f.st == 0 || f.st == 3) && c == '}' && can_close) {
          s.frames.pop_back();
          value_done(s);
          return true;
        }
        if (f.st == 3 && c == ',' && key_left && !spaced) {
          f.st = 4;
          return true;
        }
        if (f.st == 1 && c == ':') {
          f.st = 2;
          const int32_t child = f.aux >= 0 ? nd.prop_nodes[static_cast<size_t>(f.aux)] : nd.additional;
          s.frames.push_back(make(Frame::Value, child));
          return true;
        }
        return false;
      }
      case Frame::Array: {
        const SchemaNode& nd = g_->nodes[static_cast<size_t>(f.node)];
        if (space) return (f.st != 3 || f.n >= nd.min_items) && take_space(s.spaces, c);
        const bool spaced = s.spaces > 0;
        s.spaces = 0;
        if ((f.st == 0 || f.st == 3) && c == ']' && f.n >= nd.min_items) {
          s.frames.pop_back();
          value_done(s);
          return true;
        }
        if (f.st == 0 && c != ']' && nd.max_items != 0) {
          f.st = 2;
          s.frames.push_back(make(Frame::Value, nd.items));
          continue;  // the first item takes c
        }
        if (f.st == 3 && c == ',' && !spaced && (nd.max_items < 0 || f.n < nd.max_items)) {
          f.st = 2;
          s.frames.push_back(make(Frame::Value, nd.items));
          return true;
        }
        return false;
      }
      case Frame::String:
        return string_byte(s, f, c);
      case Frame::Number: {
        const bool integer_only = !(g_->nodes[static_cast<size_t>(f.node)].types & kTypeNumber);
        const int next = f.n < kMaxNumberBytes ? next_number_state(f.st, c, integer_only) : -1;
        if (next >= 0) {
          f.st = static_cast<uint8_t>(next);
          f.n += 1;
          return true;
        }
        if (!number_final(f.st)) return false;
        s.frames.pop_back();
        value_done(s);
        continue;  // the parent takes c
      }
      case Frame::Literal: {
        const auto& lits = g_->nodes[static_cast<size_t>(f.node)].literals;
        const size_t pos = static_cast<size_t>(f.n);
        uint64_t m = 0;
        bool longer = false;
        for (size_t i = 0; i < lits.size(); ++i)
          if ((f.mask >> i & 1) && lits[i].size() > pos && static_cast<uint8_t>(lits[i][pos]) == c) {
            m |= uint64_t{1} << i;
            longer = longer || lits[i].size() > pos + 1;
          }
        if (m != 0) {
          f.mask = m;
          f.n += 1;
          s.spaces = 0;
          if (!longer) {  // every value still matching ends here
            const bool marker = f.flags & kMarker;
            s.frames.pop_back();
            if (!marker) value_done(s);
          }
          return true;
        }
        if (f.flags & kMarker || !literal_final(f)) return false;
        s.frames.pop_back();
        value_done(s);
        continue;  // the parent takes c
      }
      default:
        return false;
    }
  }
  return false;  // a $ref that only refers to itself
}

}  // namespace nvfp4::server

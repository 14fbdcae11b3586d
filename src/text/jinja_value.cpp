// Values with the Python semantics chat templates rely on: truthiness, str() and repr() (of
// lists and dicts too), ==, ordering, and json.dumps(ensure_ascii=False) as transformers' tojson.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "text/jinja.h"
#include "text/unicode.h"

namespace nvfp4::jinja {

Value Value::list(List x, bool tuple) {
  Value v;
  v.t = Type::List;
  for (const auto& e : x) v.depth = std::max(v.depth, e.depth);
  if (++v.depth > kMaxNesting) fail(0, "value nested too deep", "at most 256 levels of lists and dicts");
  v.l = std::make_shared<List>(std::move(x));
  v.tuple = tuple;
  return v;
}
Value Value::dict() {
  Value v;
  v.t = Type::Dict;
  v.d = std::make_shared<Dict>();
  return v;
}
Value Value::func(Func f) {
  Value v;
  v.t = Type::Func;
  v.fn = std::make_shared<const Func>(std::move(f));
  return v;
}

void seal_dict(Value& d) {
  d.depth = 0;
  for (const auto& kv : d.d->items) d.depth = std::max(d.depth, kv.second.depth);
  if (++d.depth > kMaxNesting) fail(0, "value nested too deep", "at most 256 levels of lists and dicts");
}

const Value* Dict::find(const std::string& k) const {
  for (const auto& [key, v] : items)
    if (key == k) return &v;
  return nullptr;
}
void Dict::set(const std::string& k, Value v) {
  for (auto& [key, old] : items)
    if (key == k) { old = std::move(v); return; }
  items.emplace_back(k, std::move(v));
}

const Value* CallArgs::get(size_t idx, const std::string& name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return idx < pos.size() ? &pos[idx] : nullptr;
}

void fail(int line, std::string rule, std::string expected, std::string found) {
  throw TemplateError{line, std::move(rule), std::move(expected), std::move(found)};
}

// ---- UTF-8 ----
bool utf8_valid(const std::string& s) {
  const auto* u = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = u[i];
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      if ((u[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (u[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

std::vector<uint32_t> decode_utf8(const std::string& s) {
  std::vector<uint32_t> o;
  o.reserve(s.size());
  const auto* u = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    const unsigned c = u[i];
    const int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : 3;
    uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k <= n && i + k < s.size(); ++k) cp = (cp << 6) | (u[i + k] & 0x3F);
    o.push_back(cp);
    i += n + 1;
  }
  return o;
}

void append_utf8(std::string& out, uint32_t cp) { unicode::append_utf8(cp, out); }

std::string encode_utf8(const std::vector<uint32_t>& cps, size_t b, size_t e) {
  std::string o;
  e = std::min(e, cps.size());
  for (size_t k = b; k < e; ++k) append_utf8(o, cps[k]);
  return o;
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// str.isspace(): Unicode White_Space plus the ASCII separators \x1c-\x1f.
bool py_isspace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// ---- Python semantics ----
bool truthy(const Value& v) {
  switch (v.t) {
    case Type::Undefined: case Type::None: return false;
    case Type::Bool: return v.b;
    case Type::Int: return v.i != 0;
    case Type::Float: return v.f != 0.0;
    case Type::Str: return !v.s.empty();
    case Type::List: return !v.l->empty();
    case Type::Dict: return !v.d->items.empty();
    default: return true;
  }
}

std::string type_name(const Value& v) {
  switch (v.t) {
    case Type::Undefined: return "Undefined";
    case Type::None: return "NoneType";
    case Type::Bool: return "bool";
    case Type::Int: return "int";
    case Type::Float: return "float";
    case Type::Str: return "str";
    case Type::List: return v.tuple ? "tuple" : "list";
    case Type::Dict: return "dict";
    case Type::Object: return v.o->kind == "loop" ? "LoopContext" : "Namespace";
    case Type::Func: return "function";
  }
  return "?";
}

namespace {
std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  const size_t epos = sci.find('e');
  const int exp = std::stoi(sci.substr(epos + 1));
  std::string mant = sci.substr(0, epos);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string o = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {  // Python's repr: fixed notation for -4 <= exp < 16
    if (exp < 0) {
      o += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      o += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      o += digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
    }
    return o;
  }
  o += digits.substr(0, 1);
  if (digits.size() > 1) {
    o += '.';
    o.append(digits, 1, std::string::npos);
  }
  char e[16];
  std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return o + e;
}

bool printable(uint32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F) ||
      c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB) || c == 0xFFFE || c == 0xFFFF)
    return false;
  if (c >= 0xE000 && c <= 0xF8FF) return false;  // private use
  return true;
}

std::string str_repr(const std::string& s) {
  const bool has_sq = s.find('\'') != std::string::npos, has_dq = s.find('"') != std::string::npos;
  const char q = has_sq && !has_dq ? '"' : '\'';
  std::string o(1, q);
  for (uint32_t c : decode_utf8(s)) {
    char buf[16];
    if (c == static_cast<uint32_t>(q) || c == '\\') { o += '\\'; o += static_cast<char>(c); }
    else if (c == '\n') o += "\\n";
    else if (c == '\r') o += "\\r";
    else if (c == '\t') o += "\\t";
    else if (printable(c)) append_utf8(o, c);
    else {
      if (c < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", c);
      else if (c < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", c);
      else std::snprintf(buf, sizeof buf, "\\U%08x", c);
      o += buf;
    }
  }
  return o + q;
}
}  // namespace

std::string repr(const Value& v, int line) {
  switch (v.t) {
    case Type::Str: return str_repr(v.s);
    case Type::List: {
      std::string o = v.tuple ? "(" : "[";
      for (size_t k = 0; k < v.l->size(); ++k) o += (k ? ", " : "") + repr((*v.l)[k], line);
      if (v.tuple && v.l->size() == 1) o += ",";
      return o + (v.tuple ? ")" : "]");
    }
    case Type::Dict: {
      std::string o = "{";
      bool first = true;
      for (const auto& [k, x] : v.d->items) {
        o += (first ? "" : ", ") + str_repr(k) + ": " + repr(x, line);
        first = false;
      }
      return o + "}";
    }
    case Type::Object: case Type::Func:
      fail(line, "unsupported construct: the text of a " + type_name(v));
    case Type::Undefined: return "Undefined";
    default: return to_str(v, line);
  }
}

std::string to_str(const Value& v, int line) {
  switch (v.t) {
    case Type::Undefined: return "";
    case Type::None: return "None";
    case Type::Bool: return v.b ? "True" : "False";
    case Type::Int: return std::to_string(v.i);
    case Type::Float: return float_repr(v.f);
    case Type::Str: return v.s;
    default: return repr(v, line);
  }
}

double as_double(const Value& v) {
  return v.t == Type::Float ? v.f : v.t == Type::Int ? static_cast<double>(v.i) : v.t == Type::Bool ? (v.b ? 1 : 0) : 0;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_num() && b.is_num()) {
    if (a.t != Type::Float && b.t != Type::Float) {
      const int64_t x = a.t == Type::Bool ? a.b : a.i, y = b.t == Type::Bool ? b.b : b.i;
      return x == y;
    }
    return as_double(a) == as_double(b);
  }
  if (a.t != b.t) return false;
  switch (a.t) {
    case Type::Undefined: case Type::None: return true;
    case Type::Str: return a.s == b.s;
    case Type::List:
      if (a.tuple != b.tuple || a.l->size() != b.l->size()) return false;
      for (size_t k = 0; k < a.l->size(); ++k)
        if (!equals((*a.l)[k], (*b.l)[k])) return false;
      return true;
    case Type::Dict:
      if (a.d->items.size() != b.d->items.size()) return false;
      for (const auto& [k, x] : a.d->items) {
        const Value* y = b.d->find(k);
        if (!y || !equals(x, *y)) return false;
      }
      return true;
    case Type::Object: return a.o == b.o;
    case Type::Func: return a.fn == b.fn;
    default: return false;
  }
}

int compare(const Value& a, const Value& b, int line) {
  if (a.is_num() && b.is_num()) {
    if (a.t != Type::Float && b.t != Type::Float) {
      const int64_t x = a.t == Type::Bool ? a.b : a.i, y = b.t == Type::Bool ? b.b : b.i;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    const double x = as_double(a), y = as_double(b);
    if (std::isnan(x) || std::isnan(y)) return 2;  // every ordering is false
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.t == Type::Str && b.t == Type::Str) return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
  if (a.t == Type::List && b.t == Type::List && a.tuple == b.tuple) {
    for (size_t k = 0; k < std::min(a.l->size(), b.l->size()); ++k)
      if (!equals((*a.l)[k], (*b.l)[k])) return compare((*a.l)[k], (*b.l)[k], line);
    return a.l->size() < b.l->size() ? -1 : a.l->size() > b.l->size() ? 1 : 0;
  }
  fail(line, "TypeError: ordering comparison not supported", "two numbers, strings or lists",
       type_name(a) + " and " + type_name(b));
}

namespace {
void json_str(std::string& o, const std::string& s) {
  o += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      case '\b': o += "\\b"; break;
      case '\f': o += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  o += '"';
}
void json(std::string& o, const Value& v, int indent, bool sort_keys, int level, int line) {
  if (level > 256) fail(line, "tojson: value nested too deep");
  std::string nl, nl_end;
  if (indent >= 0) {
    nl.assign(static_cast<size_t>(indent) * (level + 1) + 1, ' ');
    nl[0] = '\n';
    nl_end.assign(static_cast<size_t>(indent) * level + 1, ' ');
    nl_end[0] = '\n';
  }
  const char* sep = indent >= 0 ? "," : ", ";
  switch (v.t) {
    case Type::None: o += "null"; return;
    case Type::Bool: o += v.b ? "true" : "false"; return;
    case Type::Int: o += std::to_string(v.i); return;
    case Type::Float:
      if (std::isnan(v.f)) o += "NaN";
      else if (std::isinf(v.f)) o += v.f < 0 ? "-Infinity" : "Infinity";
      else o += to_str(v, line);
      return;
    case Type::Str: json_str(o, v.s); return;
    case Type::List:
      if (v.l->empty()) { o += "[]"; return; }
      o += "[";
      for (size_t k = 0; k < v.l->size(); ++k) {
        o += k ? sep : "";
        o += nl;
        json(o, (*v.l)[k], indent, sort_keys, level + 1, line);
      }
      o += nl_end + "]";
      return;
    case Type::Dict: {
      if (v.d->items.empty()) { o += "{}"; return; }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& it : v.d->items) items.push_back(&it);
      if (sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      o += "{";
      for (size_t k = 0; k < items.size(); ++k) {
        o += k ? sep : "";
        o += nl;
        json_str(o, items[k]->first);
        o += ": ";
        json(o, items[k]->second, indent, sort_keys, level + 1, line);
      }
      o += nl_end + "}";
      return;
    }
    default:
      fail(line, "TypeError: tojson of a value JSON cannot hold", "none, bool, number, string, list or dict",
           type_name(v));
  }
}
}  // namespace

std::string to_json(const Value& v, int indent, bool sort_keys, int line) {
  std::string o;
  json(o, v, indent, sort_keys, 0, line);
  return o;
}

}  // namespace nvfp4::jinja

// Python string algorithms as templates see them (str.strip/split/replace/splitlines/title...,
// on UTF-8 by code point; case mapping ASCII only, refusing other text) and argument helpers.
#include <algorithm>
#include <cctype>

#include "text/jinja_text.h"

namespace nvfp4::jinja {


Value arg(const CallArgs& a, size_t idx, const std::string& name, const Value& dflt) {
  const Value* v = a.get(idx, name);
  return v ? *v : dflt;
}
const std::string& need_str(const Value& v, const std::string& what, int line) {
  if (v.t != Type::Str) fail(line, "TypeError: " + what + " needs a string", "str", type_name(v));
  return v.s;
}
int64_t need_int(const Value& v, const std::string& what, int line) {
  if (v.t == Type::Bool) return v.b;
  if (v.t != Type::Int) fail(line, "TypeError: " + what + " needs an integer", "int", type_name(v));
  return v.i;
}

std::string ascii_case(const std::string& s, int line, int mode) {  // 0 lower, 1 upper
  std::string o = s;
  for (char& c : o) {
    if (static_cast<unsigned char>(c) >= 0x80)
      fail(line, "unsupported construct: case mapping of non-ASCII text");
    c = mode ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
             : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return o;
}
std::string py_title(const std::string& s, int line) {  // str.title()
  std::string o = ascii_case(s, line, 0);
  bool prev_letter = false;
  for (char& c : o) {
    const bool letter = std::isalpha(static_cast<unsigned char>(c));
    if (letter && !prev_letter) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    prev_letter = letter;
  }
  return o;
}
std::string py_capitalize(const std::string& s, int line) {
  std::string o = ascii_case(s, line, 0);
  if (!o.empty()) o[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(o[0])));
  return o;
}
std::string jinja_title(const std::string& s, int line) {  // the title filter: words split at [-\s({[<]+
  std::string o = ascii_case(s, line, 0);
  bool start = true;
  for (char& c : o) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || std::isspace(static_cast<unsigned char>(c));
    if (!sep && start) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    start = sep;
  }
  return o;
}

// str.strip/lstrip/rstrip(chars): which = 1 left, 2 right, 3 both.
std::string py_strip(const std::string& s, const Value& chars, int which, int line) {
  const auto cps = decode_utf8(s);
  std::vector<uint32_t> set;
  const bool ws = chars.t == Type::None || chars.is_undefined();
  if (!ws) set = decode_utf8(need_str(chars, "strip", line));
  auto drop = [&](uint32_t c) { return ws ? py_isspace(c) : std::find(set.begin(), set.end(), c) != set.end(); };
  size_t b = 0, e = cps.size();
  if (which & 1) while (b < e && drop(cps[b])) ++b;
  if (which & 2) while (e > b && drop(cps[e - 1])) --e;
  return encode_utf8(cps, b, e);
}

Value py_split(Evaluator& ev, const std::string& s, const Value& sep, int64_t maxsplit, int line) {
  List o;
  if (sep.t == Type::None || sep.is_undefined()) {
    const auto cps = decode_utf8(s);
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && py_isspace(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(o.size()) == maxsplit) {
        size_t e = cps.size();
        while (e > i && py_isspace(cps[e - 1])) --e;
        o.push_back(Value::str(encode_utf8(cps, i, e)));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !py_isspace(cps[j])) ++j;
      o.push_back(Value::str(encode_utf8(cps, i, j)));
      ev.step(line);
      i = j;
    }
    return Value::list(std::move(o));
  }
  const std::string& d = need_str(sep, "split", line);
  if (d.empty()) fail(line, "ValueError: empty separator");
  size_t i = 0;
  for (;;) {
    ev.step(line);
    const size_t j = (maxsplit >= 0 && static_cast<int64_t>(o.size()) == maxsplit) ? std::string::npos : s.find(d, i);
    if (j == std::string::npos) { o.push_back(Value::str(s.substr(i))); break; }
    o.push_back(Value::str(s.substr(i, j - i)));
    i = j + d.size();
  }
  return Value::list(std::move(o));
}

std::string py_replace(Evaluator& ev, const std::string& s, const std::string& a, const std::string& b, int64_t count,
                       int line) {
  std::string o;
  int64_t n = 0;
  if (a.empty()) {
    const auto cps = decode_utf8(s);
    for (size_t k = 0; k <= cps.size(); ++k) {
      if (count < 0 || n < count) { o += b; ++n; }
      if (k < cps.size()) append_utf8(o, cps[k]);
      ev.check_size(o.size(), line);
    }
    return o;
  }
  size_t i = 0;
  for (;;) {
    const size_t j = (count >= 0 && n >= count) ? std::string::npos : s.find(a, i);
    if (j == std::string::npos) { o += s.substr(i); break; }
    o += s.substr(i, j - i) + b;
    ev.check_size(o.size(), line);
    i = j + a.size();
    ++n;
  }
  return o;
}

bool starts_or_ends(const std::string& s, const Value& x, bool start, int line) {
  auto one = [&](const std::string& p) {
    return p.size() <= s.size() && (start ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
  };
  if (x.t == Type::List && x.tuple) {
    for (const auto& p : *x.l)
      if (one(need_str(p, start ? "startswith" : "endswith", line))) return true;
    return false;
  }
  return one(need_str(x, start ? "startswith" : "endswith", line));
}

std::vector<std::string> splitlines(const std::string& s) {
  std::vector<std::string> o;
  const auto cps = decode_utf8(s);
  size_t b = 0;
  for (size_t k = 0; k < cps.size(); ++k) {
    const uint32_t c = cps[k];
    if (c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
        c == 0x2028 || c == 0x2029) {
      o.push_back(encode_utf8(cps, b, k));
      if (c == '\r' && k + 1 < cps.size() && cps[k + 1] == '\n') ++k;
      b = k + 1;
    }
  }
  if (b < cps.size()) o.push_back(encode_utf8(cps, b, cps.size()));
  return o;
}

int64_t length_of(const Value& v, int line) {
  switch (v.t) {
    case Type::Undefined: return 0;
    case Type::Str: return static_cast<int64_t>(utf8_length(v.s));
    case Type::List: return static_cast<int64_t>(v.l->size());
    case Type::Dict: return static_cast<int64_t>(v.d->items.size());
    default: fail(line, "TypeError: object of type '" + type_name(v) + "' has no len()");
  }
}

// jinja2's attribute getter for selectattr/map/join: dotted path, item lookup first.
Value attr_path(Evaluator& ev, const Value& item, const std::string& path, int line) {
  Value v = item;
  size_t b = 0;
  for (;;) {
    const size_t e = path.find('.', b);
    const std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
    const bool digits = !part.empty() && part.size() <= 18 && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    v = ev.getitem(v, digits ? Value::integer(std::stoll(part)) : Value::str(part), line);
    if (e == std::string::npos) return v;
    b = e + 1;
  }
}

CallArgs rest_args(const CallArgs& a, size_t from) {
  CallArgs r;
  for (size_t k = from; k < a.pos.size(); ++k) r.pos.push_back(a.pos[k]);
  r.kw = a.kw;
  return r;
}


}  // namespace nvfp4::jinja

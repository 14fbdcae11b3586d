// Filters (jinja2's builtins, tojson as transformers overrides it), tests, and the Python methods
// of str, dict and list that templates call. Case mapping is ASCII only: non-ASCII text through
// upper/lower/title/capitalize is refused rather than guessed.
#include <algorithm>

#include "runtime/jinja.h"

namespace nvfp4::jinja {

namespace {

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
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
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

Value bound(Value self, std::function<Value(Evaluator&, const Value&, CallArgs&)> f) {
  return Value::func([self = std::move(self), f = std::move(f)](Evaluator& ev, CallArgs& a) { return f(ev, self, a); });
}

}  // namespace

bool known_filter(const std::string& n) {
  for (const char* f : {"trim", "length", "count", "string", "safe", "upper", "lower", "capitalize", "title", "default",
                        "d", "first", "last", "list", "reverse", "items", "join", "replace", "tojson", "int", "abs",
                        "indent", "selectattr", "rejectattr", "select", "reject", "map", "escape", "e"})
    if (n == f) return true;
  return false;
}

bool known_test(const std::string& n) {
  for (const char* t : {"defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "true",
                        "false", "mapping", "iterable", "sequence", "callable", "even", "odd", "divisibleby",
                        "equalto", "eq", "==", "sameas", "ne", "!=", "lt", "lessthan", "<", "le", "<=", "gt",
                        "greaterthan", ">", "ge", ">=", "in", "lower", "upper"})
    if (n == t) return true;
  return false;
}

Value method(const Value& self, const std::string& name, int line) {
  const Value none = Value::none();
  if (self.t == Type::Str) {
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const int which = name == "strip" ? 3 : name == "lstrip" ? 1 : 2;
      return bound(self, [which, line](Evaluator&, const Value& s, CallArgs& a) {
        return Value::str(py_strip(s.s, arg(a, 0, "chars", Value::none()), which, line));
      });
    }
    if (name == "split")
      return bound(self, [line](Evaluator& ev, const Value& s, CallArgs& a) {
        const Value& ms = arg(a, 1, "maxsplit", Value::integer(-1));
        return py_split(ev, s.s, arg(a, 0, "sep", Value::none()), need_int(ms, "split", line), line);
      });
    if (name == "startswith" || name == "endswith") {
      const bool start = name == "startswith";
      return bound(self, [start, line](Evaluator&, const Value& s, CallArgs& a) {
        if (a.pos.size() != 1 || !a.kw.empty()) fail(line, "unsupported construct: startswith/endswith with start/end");
        return Value::boolean(starts_or_ends(s.s, a.pos[0], start, line));
      });
    }
    if (name == "upper" || name == "lower")
      return bound(self, [up = name == "upper", line](Evaluator&, const Value& s, CallArgs&) {
        return Value::str(ascii_case(s.s, line, up ? 1 : 0));
      });
    if (name == "title")
      return bound(self, [line](Evaluator&, const Value& s, CallArgs&) { return Value::str(py_title(s.s, line)); });
    if (name == "capitalize")
      return bound(self, [line](Evaluator&, const Value& s, CallArgs&) { return Value::str(py_capitalize(s.s, line)); });
    if (name == "replace")
      return bound(self, [line](Evaluator& ev, const Value& s, CallArgs& a) {
        const Value* x = a.get(0, "old");
        const Value* y = a.get(1, "new");
        if (!x || !y) fail(line, "TypeError: replace() needs old and new");
        const int64_t count = need_int(arg(a, 2, "count", Value::integer(-1)), "replace", line);
        return Value::str(py_replace(ev, s.s, need_str(*x, "replace", line), need_str(*y, "replace", line), count, line));
      });
    if (name == "find" || name == "rfind" || name == "count")
      return bound(self, [name, line](Evaluator&, const Value& s, CallArgs& a) {
        if (a.pos.size() != 1) fail(line, "unsupported construct: str." + name + " with start/end");
        const std::string& sub = need_str(a.pos[0], name, line);
        if (name == "count") {
          if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s.s)) + 1);
          int64_t n = 0;
          for (size_t i = s.s.find(sub); i != std::string::npos; i = s.s.find(sub, i + sub.size())) ++n;
          return Value::integer(n);
        }
        const size_t i = name == "find" ? s.s.find(sub) : s.s.rfind(sub);
        return Value::integer(i == std::string::npos ? -1 : static_cast<int64_t>(utf8_length(s.s.substr(0, i))));
      });
    if (name == "join")
      return bound(self, [line](Evaluator& ev, const Value& s, CallArgs& a) {
        if (a.pos.size() != 1) fail(line, "TypeError: join() takes one argument");
        std::string o;
        bool first = true;
        for (const auto& x : ev.iterate(a.pos[0], line)) {
          o += (first ? "" : s.s) + need_str(x, "join", line);
          first = false;
          ev.check_size(o.size(), line);
        }
        return Value::str(std::move(o));
      });
    if (name == "splitlines")
      return bound(self, [](Evaluator&, const Value& s, CallArgs&) {
        List o;
        for (auto& l : splitlines(s.s)) o.push_back(Value::str(std::move(l)));
        return Value::list(std::move(o));
      });
    if (name == "isspace" || name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isupper" ||
        name == "islower")
      return bound(self, [name, line](Evaluator&, const Value& s, CallArgs&) {
        if (name == "isspace") {
          const auto cps = decode_utf8(s.s);
          return Value::boolean(!cps.empty() && std::all_of(cps.begin(), cps.end(), py_isspace));
        }
        for (unsigned char c : s.s)
          if (c >= 0x80) fail(line, "unsupported construct: str." + name + " of non-ASCII text");
        bool cased = false, ok = !s.s.empty();
        for (unsigned char c : s.s) {
          if (name == "isdigit") ok = ok && std::isdigit(c);
          else if (name == "isalpha") ok = ok && std::isalpha(c);
          else if (name == "isalnum") ok = ok && std::isalnum(c);
          else if (name == "isupper") { ok = ok && !std::islower(c); cased = cased || std::isupper(c); }
          else { ok = ok && !std::isupper(c); cased = cased || std::islower(c); }
        }
        return Value::boolean(ok && (name == "isupper" || name == "islower" ? cased : true));
      });
    if (name == "format" || name == "format_map")
      fail(line, "unsupported construct: str.format");
    return Value::undefined(name);
  }
  if (self.t == Type::Dict) {
    if (name == "items" || name == "keys" || name == "values")
      return bound(self, [name](Evaluator&, const Value& d, CallArgs&) {
        List o;
        for (const auto& [k, v] : d.d->items) {
          if (name == "items") o.push_back(Value::list({Value::str(k), v}, true));
          else o.push_back(name == "keys" ? Value::str(k) : v);
        }
        return Value::list(std::move(o));
      });
    if (name == "get")
      return bound(self, [line](Evaluator&, const Value& d, CallArgs& a) {
        const Value* k = a.get(0, "key");
        if (!k) fail(line, "TypeError: get() needs a key");
        const Value* v = k->t == Type::Str ? d.d->find(k->s) : nullptr;
        return v ? *v : arg(a, 1, "default", Value::none());
      });
    if (name == "pop" || name == "update" || name == "clear" || name == "setdefault" || name == "popitem" ||
        name == "copy" || name == "fromkeys")
      return bound(self, [name, line](Evaluator&, const Value&, CallArgs&) -> Value {
        fail(line, "SecurityError: dict." + name + " is not safely callable (immutable sandbox)");
      });
    return Value::undefined(name);
  }
  if (self.t == Type::List) {
    if (name == "append" || name == "pop" || name == "extend" || name == "insert" || name == "remove" ||
        name == "sort" || name == "reverse" || name == "clear" || name == "index" || name == "count" || name == "copy")
      return bound(self, [name, line](Evaluator&, const Value& l, CallArgs& a) -> Value {
        if (name == "count" || name == "index") {
          if (a.pos.size() != 1) fail(line, "TypeError: list." + name + " takes one argument");
          int64_t n = 0;
          for (size_t k = 0; k < l.l->size(); ++k) {
            if (equals((*l.l)[k], a.pos[0])) {
              if (name == "index") return Value::integer(static_cast<int64_t>(k));
              ++n;
            }
          }
          if (name == "index") fail(line, "ValueError: value is not in the list");
          return Value::integer(n);
        }
        fail(line, "SecurityError: list." + name + " is not safely callable (immutable sandbox)");
      });
    return Value::undefined(name);
  }
  (void)none;
  return Value::undefined(name);
}

bool apply_test(Evaluator& ev, const std::string& name, const Value& v, CallArgs& a, int line) {
  auto other = [&]() -> const Value& {
    if (a.pos.empty()) fail(line, "TypeError: test '" + name + "' needs an argument");
    return a.pos[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.t == Type::None;
  if (name == "string") return v.t == Type::Str;
  if (name == "number") return v.is_num();
  if (name == "integer") return v.t == Type::Int;
  if (name == "float") return v.t == Type::Float;
  if (name == "boolean") return v.t == Type::Bool;
  if (name == "true") return v.t == Type::Bool && v.b;
  if (name == "false") return v.t == Type::Bool && !v.b;
  if (name == "mapping") return v.t == Type::Dict;
  if (name == "iterable") return v.t == Type::Str || v.t == Type::List || v.t == Type::Dict || v.is_undefined();
  if (name == "sequence") return v.t == Type::Str || v.t == Type::List || v.t == Type::Dict || v.is_undefined();
  if (name == "callable") return v.t == Type::Func;
  if (name == "even" || name == "odd") {
    const int64_t i = need_int(v, name, line);
    return ((i % 2) != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const int64_t d = need_int(other(), name, line);
    if (d == 0) fail(line, "ZeroDivisionError: divisibleby 0");
    return need_int(v, name, line) % d == 0;
  }
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") {
    const Value& o = other();
    if (name == "sameas" && (o.t == Type::List || o.t == Type::Dict)) return v.t == o.t && (v.l == o.l && v.d == o.d);
    if (name == "sameas" && o.t != v.t) return false;
    return equals(v, o);
  }
  if (name == "ne" || name == "!=") return !equals(v, other());
  if (name == "lt" || name == "lessthan" || name == "<" || name == "le" || name == "<=" || name == "gt" ||
      name == "greaterthan" || name == ">" || name == "ge" || name == ">=") {
    const int c = compare(v, other(), line);
    if (c == 2) return false;
    if (name == "lt" || name == "lessthan" || name == "<") return c < 0;
    if (name == "le" || name == "<=") return c <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">") return c > 0;
    return c >= 0;
  }
  if (name == "in") {
    const Value& seq = other();
    if (seq.t == Type::Str) return v.t == Type::Str && seq.s.find(v.s) != std::string::npos;
    for (const auto& x : ev.iterate(seq, line))
      if (equals(v, x)) return true;
    return false;
  }
  if (name == "lower" || name == "upper") {
    const std::string& s = need_str(v, name, line);
    return s == ascii_case(s, line, name == "upper" ? 1 : 0);
  }
  fail(line, "unsupported construct: test '" + name + "'");
}

Value apply_filter(Evaluator& ev, const std::string& name, Value v, CallArgs& a, int line) {
  const Value none = Value::none();
  if (name == "trim") return Value::str(py_strip(to_str(v, line), arg(a, 0, "chars", none), 3, line));
  if (name == "length" || name == "count") return Value::integer(length_of(v, line));
  if (name == "string") return Value::str(to_str(v, line));
  if (name == "safe") return v.is_undefined() ? Value::str("") : v;
  if (name == "upper" || name == "lower") return Value::str(ascii_case(to_str(v, line), line, name == "upper"));
  if (name == "capitalize") return Value::str(py_capitalize(to_str(v, line), line));
  if (name == "title") return Value::str(jinja_title(to_str(v, line), line));
  if (name == "default" || name == "d") {
    const bool boolean = truthy(arg(a, 1, "boolean", Value::boolean(false)));
    if (v.is_undefined() || (boolean && !truthy(v))) return arg(a, 0, "default_value", Value::str(""));
    return v;
  }
  if (name == "first" || name == "last") {
    auto items = ev.iterate(v, line);
    if (items.empty()) return Value::undefined();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::list(ev.iterate(v, line));
  if (name == "reverse") {
    if (v.t == Type::Str) {
      auto cps = decode_utf8(v.s);
      std::reverse(cps.begin(), cps.end());
      return Value::str(encode_utf8(cps));
    }
    auto items = ev.iterate(v, line);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::list();
    if (v.t != Type::Dict) fail(line, "TypeError: items filter needs a mapping", "dict", type_name(v));
    CallArgs none_args;
    return ev.call(method(v, "items", line), none_args, line);
  }
  if (name == "join") {
    const std::string sep = to_str(arg(a, 0, "d", Value::str("")), line);
    const Value* attr = a.get(1, "attribute");
    std::string o;
    bool first = true;
    for (const auto& x : ev.iterate(v, line)) {
      o += (first ? "" : sep) + to_str(attr ? attr_path(ev, x, to_str(*attr, line), line) : x, line);
      first = false;
      ev.check_size(o.size(), line);
    }
    return Value::str(std::move(o));
  }
  if (name == "replace") {
    const Value* x = a.get(0, "old");
    const Value* y = a.get(1, "new");
    if (!x || !y) fail(line, "TypeError: replace needs old and new");
    const Value* c = a.get(2, "count");
    return Value::str(py_replace(ev, to_str(v, line), to_str(*x, line), to_str(*y, line),
                                 c && c->t != Type::None ? need_int(*c, "replace", line) : -1, line));
  }
  if (name == "tojson") {
    const Value& ea = arg(a, 0, "ensure_ascii", Value::boolean(false));
    const Value& ind = arg(a, 1, "indent", none);
    const Value& seps = arg(a, 2, "separators", none);
    const Value& sk = arg(a, 3, "sort_keys", Value::boolean(false));
    if (truthy(ea)) fail(line, "unsupported construct: tojson(ensure_ascii=true)");
    if (seps.t != Type::None) fail(line, "unsupported construct: tojson(separators=...)");
    int indent = -1;
    if (ind.t != Type::None) {
      const int64_t n = need_int(ind, "tojson indent", line);
      if (n < 0 || n > 64) fail(line, "unsupported construct: tojson indent", "0 to 64", std::to_string(n));
      indent = static_cast<int>(n);
    }
    std::string s = to_json(v, indent, truthy(sk), line);
    ev.check_size(s.size(), line);
    return Value::str(std::move(s));
  }
  if (name == "int") {
    const Value& dflt = arg(a, 0, "default", Value::integer(0));
    if (v.t == Type::Int) return v;
    if (v.t == Type::Bool) return Value::integer(v.b);
    if (v.t == Type::Float) {
      if (!(v.f > -9.2e18 && v.f < 9.2e18)) return dflt;
      return Value::integer(static_cast<int64_t>(v.f));
    }
    if (v.t == Type::Str) {
      const std::string s = py_strip(v.s, none, 3, line);
      if (s.empty()) return dflt;
      size_t k = (s[0] == '-' || s[0] == '+') ? 1 : 0;
      if (k == s.size() || s.size() > 18) return dflt;
      for (size_t j = k; j < s.size(); ++j)
        if (!std::isdigit(static_cast<unsigned char>(s[j]))) return dflt;
      return Value::integer(std::stoll(s));
    }
    return dflt;
  }
  if (name == "abs") {
    if (!v.is_num()) fail(line, "TypeError: abs needs a number", "", type_name(v));
    if (v.t == Type::Float) return Value::real(v.f < 0 ? -v.f : v.f);
    const int64_t i = v.t == Type::Bool ? v.b : v.i;
    if (i == INT64_MIN) fail(line, "integer overflow");
    return Value::integer(i < 0 ? -i : i);
  }
  if (name == "indent") {
    const Value& w = arg(a, 0, "width", Value::integer(4));
    std::string ind;
    if (w.t == Type::Str) {
      ind = w.s;
    } else {
      const int64_t n = need_int(w, "indent", line);
      if (n < 0 || n > 1024) fail(line, "unsupported construct: indent width", "0 to 1024", std::to_string(n));
      ind.assign(static_cast<size_t>(n), ' ');
    }
    const bool first = truthy(arg(a, 1, "first", Value::boolean(false)));
    const bool blank = truthy(arg(a, 2, "blank", Value::boolean(false)));
    auto lines = splitlines(to_str(v, line) + "\n");
    std::string o;
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k == 0) { o += lines[0]; continue; }
      o += "\n";
      if (blank || !lines[k].empty()) o += ind;
      o += lines[k];
      ev.check_size(o.size(), line);
    }
    if (first) o = ind + o;
    return Value::str(std::move(o));
  }
  if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
    const bool by_attr = name == "selectattr" || name == "rejectattr";
    const bool keep_if = name == "selectattr" || name == "select";
    const size_t t0 = by_attr ? 1 : 0;
    if (by_attr && (a.pos.empty() || a.pos[0].t != Type::Str)) fail(line, "TypeError: " + name + " needs an attribute name");
    List o;
    for (const auto& x : ev.iterate(v, line)) {
      ev.step(line);
      const Value subject = by_attr ? attr_path(ev, x, a.pos[0].s, line) : x;
      bool r;
      if (a.pos.size() > t0) {
        CallArgs targs = rest_args(a, t0 + 1);
        r = apply_test(ev, need_str(a.pos[t0], name + " test", line), subject, targs, line);
      } else {
        r = truthy(subject);
      }
      if (r == keep_if) o.push_back(x);
    }
    return Value::list(std::move(o));
  }
  if (name == "map") {
    List o;
    const Value* attr = nullptr;
    for (const auto& [k, x] : a.kw)
      if (k == "attribute") attr = &x;
    for (const auto& x : ev.iterate(v, line)) {
      ev.step(line);
      if (attr) {
        Value r = attr_path(ev, x, to_str(*attr, line), line);
        if (r.is_undefined()) {
          for (const auto& [k, d] : a.kw)
            if (k == "default") r = d;
        }
        o.push_back(r);
      } else {
        if (a.pos.empty()) fail(line, "TypeError: map needs a filter name or attribute=");
        CallArgs fargs = rest_args(a, 1);
        o.push_back(apply_filter(ev, need_str(a.pos[0], "map filter", line), x, fargs, line));
      }
    }
    return Value::list(std::move(o));
  }
  if (name == "escape" || name == "e") {
    std::string o;
    for (char c : to_str(v, line)) {
      switch (c) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&#34;"; break;
        case '\'': o += "&#39;"; break;
        default: o += c;
      }
    }
    return Value::str(std::move(o));
  }
  fail(line, "unsupported construct: filter '" + name + "'");
}

}  // namespace nvfp4::jinja

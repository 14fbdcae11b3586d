// Filters (jinja2's builtins, tojson as transformers overrides it) and tests. Names are checked
// at parse time (known_filter/known_test), as jinja2 does when it compiles a template.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "text/jinja_text.h"

namespace nvfp4::jinja {

bool known_filter(const std::string& n) {
  for (const char* f : {"trim", "length", "count", "string", "safe", "upper", "lower", "capitalize", "title", "default",
                        "d", "first", "last", "list", "reverse", "items", "dictsort", "join", "replace", "tojson", "int", "abs",
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
  ev.charge((v.t == Type::Str ? v.s.size() : v.t == Type::List ? v.l->size() : 0) / 16, line);
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
  if (name == "dictsort") {
    // jinja2's do_dictsort: (key, value) pairs sorted by key (by="value": by value), strings
    // compared lower-cased unless case_sensitive (ASCII; other text is refused, as by `lower`);
    // sorted() is stable, reverse too.
    if (v.is_undefined())
      fail(line, "UndefinedError: " + (v.s.empty() ? std::string("a value") : "'" + v.s + "'") + " is undefined", "",
           "dictsort of it");
    if (v.t != Type::Dict) fail(line, "TypeError: dictsort filter needs a mapping", "dict", type_name(v));
    const bool case_sensitive = truthy(arg(a, 0, "case_sensitive", Value::boolean(false)));
    const std::string by = to_str(arg(a, 1, "by", Value::str("key")), line);
    const bool reverse = truthy(arg(a, 2, "reverse", Value::boolean(false)));
    if (by != "key" && by != "value") fail(line, "FilterArgumentError: You can only sort by either \"key\" or \"value\"");
    const size_t pos = by == "key" ? 0 : 1;
    CallArgs none_args;
    const List items = *ev.call(method(v, "items", line), none_args, line).l;
    std::vector<Value> keys;
    keys.reserve(items.size());
    for (const auto& it : items) {
      const Value& k = (*it.l)[pos];
      keys.push_back(!case_sensitive && k.t == Type::Str ? Value::str(ascii_case(k.s, line, 0)) : k);
    }
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return reverse ? compare(keys[y], keys[x], line) < 0 : compare(keys[x], keys[y], line) < 0;
    });
    List o;
    for (size_t i : order) o.push_back(items[i]);
    return Value::list(std::move(o));
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
    auto from_double = [&](double d) {
      if (std::isnan(d) || std::isinf(d)) fail(line, "OverflowError: int of an infinite or NaN float");
      if (!(d > -9.2e18 && d < 9.2e18)) fail(line, "integer overflow", "a result within 64 bits");
      return Value::integer(static_cast<int64_t>(d));
    };
    if (v.t == Type::Float) return from_double(v.f);
    if (v.t == Type::Str) {  // int(s); failing that int(float(s)) ("42.23"|int is 42); else the default
      const std::string s = py_strip(v.s, none, 3, line);
      const size_t k = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
      bool digits = k < s.size();
      for (size_t j = k; j < s.size(); ++j) digits = digits && std::isdigit(static_cast<unsigned char>(s[j]));
      if (digits) {
        if (s.size() - k > 18) fail(line, "integer overflow", "at most 18 digits", s);
        return Value::integer(std::stoll(s));
      }
      // Python's float(): decimal digits, a point, an exponent; no hex, no underscores here.
      bool ok = k < s.size(), seen_digit = false, seen_e = false;
      for (size_t j = k; j < s.size() && ok; ++j) {
        const char c = s[j];
        if (std::isdigit(static_cast<unsigned char>(c))) seen_digit = true;
        else if (c == '.' && !seen_e) {}
        else if ((c == 'e' || c == 'E') && seen_digit && !seen_e) {
          seen_e = true;
          if (j + 1 < s.size() && (s[j + 1] == '+' || s[j + 1] == '-')) ++j;
          ok = j + 1 < s.size();
        } else ok = false;
      }
      if (ok && seen_digit && std::count(s.begin(), s.end(), '.') <= 1) return from_double(std::strtod(s.c_str(), nullptr));
      if (s.find('_') != std::string::npos) fail(line, "unsupported construct: int of a string with '_'");
      std::string low = s.size() < 16 ? s : std::string("x");
      for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!low.empty() && (low[0] == '-' || low[0] == '+')) low.erase(0, 1);
      if (low == "inf" || low == "infinity" || low == "nan") fail(line, "OverflowError: int of an infinite or NaN float");
      return dflt;
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

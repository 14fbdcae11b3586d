// The Python methods of str, dict and list that templates call (bound at attribute access).
// Mutating methods are refused as jinja2's ImmutableSandboxedEnvironment refuses them.
#include <algorithm>
#include <cctype>
#include <functional>

#include "text/jinja_text.h"

namespace nvfp4::jinja {

namespace {
// Work on a string or list is proportional to its size: charged as steps (1 per 16 bytes/items).
Value bound(Value self, std::function<Value(Evaluator&, const Value&, CallArgs&)> f) {
  return Value::func([self = std::move(self), f = std::move(f)](Evaluator& ev, CallArgs& a) {
    ev.charge((self.t == Type::Str ? self.s.size() : self.t == Type::List ? self.l->size() : 0) / 16, 0);
    return f(ev, self, a);
  });
}

}  // namespace

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

}  // namespace nvfp4::jinja

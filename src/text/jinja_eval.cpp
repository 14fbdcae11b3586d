// The evaluator: statements write to an output string, expressions evaluate to Values with
// jinja2's semantics (default Undefined: prints empty, is false, iterates empty, fails on
// attribute access, arithmetic and calls). Scopes as jinja2's: a for loop's body has its own
// (per iteration), `set` writes the innermost, macros see the template's top level and their
// arguments. Runaway templates stop at Limits (steps, output bytes, call depth).
#include <algorithm>
#include <cmath>
#include <limits>

#include "text/jinja.h"

namespace nvfp4::jinja {

Evaluator::Evaluator(const Limits& lim, const Globals& g) : lim_(lim) {
  scopes_.emplace_back();
  for (const auto& [k, v] : g.vars) scopes_[0][k] = v;
}

Evaluator::~Evaluator() {
  for (auto& o : objects_) o->attrs.items.clear();
}

void Evaluator::charge(uint64_t n, int line) {
  steps_ += n;
  step(line);
}

void Evaluator::step(int line) {
  if (++steps_ > lim_.max_steps)
    fail(line, "template ran too long", "at most " + std::to_string(lim_.max_steps) + " steps");
}

void Evaluator::check_size(size_t n, int line) const {
  if (n > lim_.max_output)
    fail(line, "template output too large", "at most " + std::to_string(lim_.max_output) + " bytes",
         std::to_string(n) + " bytes");
}

std::string Evaluator::run(const Program& p) {
  std::string out;
  exec(p.body, out);
  return out;
}

Value Evaluator::lookup(const std::string& name) const {
  for (size_t k = scopes_.size(); k-- > 0;) {
    auto it = scopes_[k].find(name);
    if (it != scopes_[k].end()) return it->second;
  }
  return Value::undefined(name);
}

void Evaluator::assign(const std::string& name, Value v) { scopes_.back()[name] = std::move(v); }

namespace {
[[noreturn]] void undefined_error(const Value& v, int line, const std::string& what) {
  fail(line, "UndefinedError: " + (v.s.empty() ? std::string("a value") : "'" + v.s + "'") + " is undefined",
       "", what);
}
}  // namespace

std::vector<Value> Evaluator::iterate(const Value& v, int line) {
  switch (v.t) {
    case Type::Undefined: return {};
    case Type::List: return *v.l;
    case Type::Str: {
      std::vector<Value> o;
      for (uint32_t c : decode_utf8(v.s)) {
        std::string s;
        append_utf8(s, c);
        o.push_back(Value::str(std::move(s)));
      }
      return o;
    }
    case Type::Dict: {
      std::vector<Value> o;
      for (const auto& kv : v.d->items) o.push_back(Value::str(kv.first));
      return o;
    }
    default: fail(line, "TypeError: '" + type_name(v) + "' object is not iterable");
  }
}

Value Evaluator::getattr(const Value& obj, const std::string& name, int line) {
  if (obj.is_undefined()) undefined_error(obj, line, "attribute '" + name + "' of it");
  if (obj.t == Type::Object) {
    const Value* v = obj.o->attrs.find(name);
    return v ? *v : Value::undefined(name);
  }
  Value m = method(obj, name, line);
  if (!m.is_undefined()) return m;
  if (obj.t == Type::Dict) {
    const Value* v = obj.d->find(name);
    if (v) return *v;
  }
  return Value::undefined(name);
}

Value Evaluator::getitem(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) undefined_error(obj, line, "an item of it");
  if (obj.t == Type::Dict && key.t == Type::Str) {
    const Value* v = obj.d->find(key.s);
    if (v) return *v;
    return getattr(obj, key.s, line);
  }
  if ((obj.t == Type::List || obj.t == Type::Str) && (key.t == Type::Int || key.t == Type::Bool)) {
    int64_t i = key.t == Type::Bool ? key.b : key.i;
    if (obj.t == Type::List) {
      const int64_t n = static_cast<int64_t>(obj.l->size());
      if (i < 0) i += n;
      return i >= 0 && i < n ? (*obj.l)[static_cast<size_t>(i)] : Value::undefined();
    }
    charge(obj.s.size() / 16, line);
    const auto cps = decode_utf8(obj.s);
    const int64_t n = static_cast<int64_t>(cps.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined();
    return Value::str(encode_utf8(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
  }
  if (key.t == Type::Str) return getattr(obj, key.s, line);
  return Value::undefined();
}

Value Evaluator::call(const Value& f, CallArgs& a, int line) {
  if (f.is_undefined()) undefined_error(f, line, "a call of it");
  if (f.t != Type::Func) fail(line, "TypeError: '" + type_name(f) + "' object is not callable");
  if (++depth_ > lim_.max_depth) {
    --depth_;
    fail(line, "template calls nested too deep", "at most " + std::to_string(lim_.max_depth));
  }
  struct Dec { int& d; ~Dec() { --d; } } dec{depth_};
  try {
    return (*f.fn)(*this, a);
  } catch (TemplateError& e) {
    if (e.line == 0) e.line = line;  // raised by a global function: the call's line
    throw;
  }
}

namespace {
int64_t as_int(const Value& v) { return v.t == Type::Bool ? v.b : v.i; }

Value slice(const Value& obj, const Value* parts, int line) {
  if (obj.t != Type::List && obj.t != Type::Str)
    fail(line, "TypeError: '" + type_name(obj) + "' object is not subscriptable by a slice");
  int64_t idx[3];
  bool given[3];
  for (int k = 0; k < 3; ++k) {
    given[k] = parts[k].t != Type::None && !parts[k].is_undefined();
    if (given[k] && parts[k].t != Type::Int && parts[k].t != Type::Bool)
      fail(line, "TypeError: slice indices must be integers", "", type_name(parts[k]));
    idx[k] = given[k] ? as_int(parts[k]) : 0;
  }
  const int64_t step = given[2] ? idx[2] : 1;
  if (step == 0) fail(line, "ValueError: slice step cannot be zero");
  std::vector<uint32_t> cps;
  if (obj.t == Type::Str) cps = decode_utf8(obj.s);
  const int64_t n = static_cast<int64_t>(obj.t == Type::Str ? cps.size() : obj.l->size());
  auto norm = [&](int64_t i, bool g, int64_t dflt) {
    if (!g) return dflt;
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t start = norm(idx[0], given[0], step > 0 ? 0 : n - 1);
  const int64_t stop = norm(idx[1], given[1], step > 0 ? n : -1);
  std::vector<int64_t> pick;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) pick.push_back(i);
  if (obj.t == Type::Str) {
    std::string o;
    for (int64_t i : pick) append_utf8(o, cps[static_cast<size_t>(i)]);
    return Value::str(std::move(o));
  }
  List o;
  for (int64_t i : pick) o.push_back((*obj.l)[static_cast<size_t>(i)]);
  return Value::list(std::move(o), obj.tuple);
}
}  // namespace

Value Evaluator::binop(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "~") {
    std::string s = to_str(a, line) + to_str(b, line);
    check_size(s.size(), line);
    charge(s.size() / 16, line);
    return Value::str(std::move(s));
  }
  if (a.is_undefined()) undefined_error(a, line, "operand of '" + op + "'");
  if (b.is_undefined()) undefined_error(b, line, "operand of '" + op + "'");
  if (a.is_num() && b.is_num()) {
    const bool fl = a.t == Type::Float || b.t == Type::Float;
    const double x = as_double(a), y = as_double(b);
    const int64_t p = as_int(a), q = as_int(b);
    int64_t r = 0;
    if (op == "+" || op == "-" || op == "*") {
      if (fl) return Value::real(op == "+" ? x + y : op == "-" ? x - y : x * y);
      const bool over = op == "+" ? __builtin_add_overflow(p, q, &r)
                        : op == "-" ? __builtin_sub_overflow(p, q, &r) : __builtin_mul_overflow(p, q, &r);
      if (over) fail(line, "integer overflow", "a result within 64 bits");
      return Value::integer(r);
    }
    if (op == "/") {
      if (y == 0) fail(line, "ZeroDivisionError: division by zero");
      return Value::real(x / y);
    }
    if (op == "//" || op == "%") {
      if (fl ? y == 0 : q == 0) fail(line, "ZeroDivisionError: integer division or modulo by zero");
      if (fl) {
        const double m = std::fmod(x, y);
        const double mm = (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
        return op == "%" ? Value::real(mm) : Value::real(std::floor(x / y));
      }
      if (p == std::numeric_limits<int64_t>::min() && q == -1) fail(line, "integer overflow");
      int64_t d = p / q, m = p % q;
      if (m != 0 && ((m < 0) != (q < 0))) { d -= 1; m += q; }
      return op == "%" ? Value::integer(m) : Value::integer(d);
    }
    if (op == "**") {
      if (x == 0 && y < 0) fail(line, "ZeroDivisionError: 0 cannot be raised to a negative power");
      if (!fl && q >= 0) {
        if (p == 0 || p == 1) return Value::integer(q == 0 ? 1 : p);
        if (p == -1) return Value::integer(q % 2 ? -1 : 1);
        int64_t acc = 1;  // |p| >= 2: overflow within 63 multiplications
        for (int64_t k = 0; k < q; ++k)
          if (__builtin_mul_overflow(acc, p, &acc)) fail(line, "integer overflow", "a result within 64 bits");
        return Value::integer(acc);
      }
      return Value::real(std::pow(x, y));
    }
  }
  if (op == "+") {
    if (a.t == Type::Str && b.t == Type::Str) {
      check_size(a.s.size() + b.s.size(), line);
      charge((a.s.size() + b.s.size()) / 16, line);
      return Value::str(a.s + b.s);
    }
    if (a.t == Type::List && b.t == Type::List && a.tuple == b.tuple) {
      check_size(a.l->size() + b.l->size(), line);
      charge(a.l->size() + b.l->size(), line);
      List o = *a.l;
      o.insert(o.end(), b.l->begin(), b.l->end());
      return Value::list(std::move(o), a.tuple);
    }
  }
  if (op == "*") {
    const Value* seq = (a.t == Type::Str || a.t == Type::List) ? &a : (b.t == Type::Str || b.t == Type::List) ? &b : nullptr;
    const Value* cnt = seq == &a ? &b : &a;
    if (seq && (cnt->t == Type::Int || cnt->t == Type::Bool)) {
      const int64_t n = std::max<int64_t>(0, as_int(*cnt));
      const size_t unit = seq->t == Type::Str ? seq->s.size() : seq->l->size();
      if (unit == 0) return seq->t == Type::Str ? Value::str("") : Value::list({}, seq->tuple);
      if (static_cast<uint64_t>(n) > lim_.max_output / unit) check_size(SIZE_MAX, line);
      if (seq->t == Type::Str) {
        charge(static_cast<uint64_t>(n) * unit / 16, line);
        std::string o;
        for (int64_t k = 0; k < n; ++k) o += seq->s;
        return Value::str(std::move(o));
      }
      charge(static_cast<uint64_t>(n) * unit, line);
      List o;
      for (int64_t k = 0; k < n; ++k) o.insert(o.end(), seq->l->begin(), seq->l->end());
      return Value::list(std::move(o), seq->tuple);
    }
  }
  if (op == "%" && a.t == Type::Str) fail(line, "unsupported construct: '%' string formatting");
  fail(line, "TypeError: unsupported operand types for '" + op + "'", "", type_name(a) + " and " + type_name(b));
}

Value Evaluator::cmp(const Expr& e) {
  Value left = eval(*e.kids[0]);
  for (size_t k = 0; k < e.ops.size(); ++k) {
    Value right = eval(*e.kids[k + 1]);
    const std::string& op = e.ops[k];
    bool r;
    if (op == "==") r = equals(left, right);
    else if (op == "!=") r = !equals(left, right);
    else if (op == "in" || op == "not in") {
      bool found = false;
      if (right.t == Type::Str) {
        if (left.t != Type::Str) fail(e.line, "TypeError: 'in <string>' requires a string", "", type_name(left));
        found = right.s.find(left.s) != std::string::npos;
      } else if (right.t == Type::List) {
        for (const auto& x : *right.l)
          if (equals(left, x)) { found = true; break; }
      } else if (right.t == Type::Dict) {
        found = left.t == Type::Str && right.d->find(left.s) != nullptr;
      } else if (!right.is_undefined()) {
        fail(e.line, "TypeError: argument of type '" + type_name(right) + "' is not iterable");
      }
      r = op == "in" ? found : !found;
    } else {
      if (left.is_undefined()) undefined_error(left, e.line, "operand of '" + op + "'");
      if (right.is_undefined()) undefined_error(right, e.line, "operand of '" + op + "'");
      const int c = compare(left, right, e.line);
      r = c == 2 ? false : op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Evaluator::eval(const Expr& e) {
  step(e.line);
  const Nest nest(nest_, e.line);
  switch (e.k) {
    case Expr::Const: return e.c;
    case Expr::Name: return lookup(e.name);
    case Expr::Attr: return getattr(eval(*e.kids[0]), e.name, e.line);
    case Expr::Item: {
      Value o = eval(*e.kids[0]);
      return getitem(o, eval(*e.kids[1]), e.line);
    }
    case Expr::Slice: {
      Value o = eval(*e.kids[0]);
      if (o.is_undefined()) undefined_error(o, e.line, "a slice of it");
      Value parts[3];
      for (int k = 0; k < 3; ++k) parts[k] = e.kids[k + 1] ? eval(*e.kids[k + 1]) : Value::none();
      charge((o.t == Type::Str ? o.s.size() : o.t == Type::List ? o.l->size() : 0) / 16, e.line);
      return slice(o, parts, e.line);
    }
    case Expr::Call: case Expr::Filter: case Expr::Test: {
      Value head = e.k == Expr::Call ? eval(*e.kids[0]) : Value();
      Value in = e.k == Expr::Call ? Value() : eval(*e.kids[0]);
      CallArgs a;
      for (size_t k = 1; k < e.kids.size(); ++k) {
        Value v = eval(*e.kids[k]);
        if (e.kw[k - 1].empty()) a.pos.push_back(std::move(v));
        else a.kw.emplace_back(e.kw[k - 1], std::move(v));
      }
      if (e.k == Expr::Call) return call(head, a, e.line);
      if (e.k == Expr::Filter) return apply_filter(*this, e.name, std::move(in), a, e.line);
      return Value::boolean(apply_test(*this, e.name, in, a, e.line) != e.negate);
    }
    case Expr::Neg: case Expr::Pos: {
      Value v = eval(*e.kids[0]);
      if (v.is_undefined()) undefined_error(v, e.line, "operand of unary '-'");
      if (!v.is_num()) fail(e.line, "TypeError: bad operand type for unary '-'", "a number", type_name(v));
      if (e.k == Expr::Pos) return v.t == Type::Bool ? Value::integer(v.b) : v;
      if (v.t == Type::Float) return Value::real(-v.f);
      const int64_t i = as_int(v);
      if (i == std::numeric_limits<int64_t>::min()) fail(e.line, "integer overflow");
      return Value::integer(-i);
    }
    case Expr::Not: return Value::boolean(!truthy(eval(*e.kids[0])));
    case Expr::And: {
      Value a = eval(*e.kids[0]);
      return truthy(a) ? eval(*e.kids[1]) : a;
    }
    case Expr::Or: {
      Value a = eval(*e.kids[0]);
      return truthy(a) ? a : eval(*e.kids[1]);
    }
    case Expr::Bin: {
      Value a = eval(*e.kids[0]);
      Value b = eval(*e.kids[1]);
      return binop(e.name, a, b, e.line);
    }
    case Expr::Cmp: return cmp(e);
    case Expr::Cond:
      if (truthy(eval(*e.kids[0]))) return eval(*e.kids[1]);
      return e.kids[2] ? eval(*e.kids[2]) : Value::undefined();
    case Expr::ListLit: case Expr::TupleLit: {
      List o;
      for (const auto& k : e.kids) o.push_back(eval(*k));
      return Value::list(std::move(o), e.k == Expr::TupleLit);
    }
    case Expr::DictLit: {
      Value d = Value::dict();
      for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
        Value key = eval(*e.kids[k]);
        if (key.t != Type::Str) fail(e.line, "unsupported construct: a dict key that is not a string", "", type_name(key));
        d.d->set(key.s, eval(*e.kids[k + 1]));
      }
      seal_dict(d);
      return d;
    }
  }
  fail(e.line, "internal: unknown expression");
}

void Evaluator::exec_set(const Node& n, Value v) {
  if (n.attr_set) {
    Value ns = lookup(n.targets[0]);
    if (ns.t != Type::Object || !ns.o->mutable_attrs)
      fail(n.line, "cannot assign an attribute of a non-namespace object", "a namespace()", type_name(ns));
    ns.o->attrs.set(n.targets[1], std::move(v));
    return;
  }
  if (n.targets.size() == 1) { assign(n.targets[0], std::move(v)); return; }
  if (v.t != Type::List || v.l->size() != n.targets.size())
    fail(n.line, "ValueError: cannot unpack into " + std::to_string(n.targets.size()) + " names", "a list of that size",
         type_name(v));
  for (size_t k = 0; k < n.targets.size(); ++k) assign(n.targets[k], (*v.l)[k]);
}

Value Evaluator::call_macro(const Node& m, CallArgs& a, int line) {
  if (a.pos.size() > m.targets.size())
    fail(line, "TypeError: macro '" + m.text + "' takes " + std::to_string(m.targets.size()) + " arguments", "",
         std::to_string(a.pos.size()));
  for (const auto& [k, v] : a.kw) {
    (void)v;
    if (std::find(m.targets.begin(), m.targets.end(), k) == m.targets.end())
      fail(line, "TypeError: macro '" + m.text + "' has no argument '" + k + "'");
  }
  std::vector<std::map<std::string, Value>> saved;
  saved.swap(scopes_);
  scopes_.push_back(saved[0]);
  scopes_.emplace_back();
  struct Restore {
    std::vector<std::map<std::string, Value>>& s;
    std::vector<std::map<std::string, Value>>& old;
    ~Restore() { s.swap(old); }
  } restore{scopes_, saved};
  for (size_t k = 0; k < m.targets.size(); ++k) {
    const Value* v = a.get(k, m.targets[k]);
    if (v) assign(m.targets[k], *v);
    else if (m.defaults[k]) assign(m.targets[k], eval(*m.defaults[k]));
    else assign(m.targets[k], Value::undefined(m.targets[k]));
  }
  std::string out;
  exec(m.body, out);
  return Value::str(std::move(out));
}

Evaluator::Flow Evaluator::exec_for(const Node& n, std::string& out) {
  const std::vector<Value> all = iterate(eval(*n.e), n.line);
  auto bind = [&](const Value& item) {
    if (n.targets.size() == 1) { assign(n.targets[0], item); return; }
    if (item.t != Type::List || item.l->size() != n.targets.size())
      fail(n.line, "ValueError: cannot unpack a loop item into " + std::to_string(n.targets.size()) + " names", "",
           type_name(item));
    for (size_t k = 0; k < n.targets.size(); ++k) assign(n.targets[k], (*item.l)[k]);
  };
  std::vector<Value> items;
  if (n.cond) {
    for (const auto& it : all) {
      scopes_.emplace_back();
      bind(it);
      const bool keep = truthy(eval(*n.cond));
      scopes_.pop_back();
      if (keep) items.push_back(it);
    }
  } else {
    items = all;
  }
  const int64_t len = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < len; ++i) {
    step(n.line);
    scopes_.emplace_back();
    struct Pop { std::vector<std::map<std::string, Value>>& s; ~Pop() { s.pop_back(); } } pop{scopes_};
    Value loop;
    loop.t = Type::Object;
    loop.o = std::make_shared<Object>();
    loop.o->kind = "loop";
    Dict& L = loop.o->attrs;
    L.set("index0", Value::integer(i));
    L.set("index", Value::integer(i + 1));
    L.set("revindex0", Value::integer(len - i - 1));
    L.set("revindex", Value::integer(len - i));
    L.set("first", Value::boolean(i == 0));
    L.set("last", Value::boolean(i == len - 1));
    L.set("length", Value::integer(len));
    L.set("depth", Value::integer(1));
    L.set("depth0", Value::integer(0));
    if (i > 0) L.set("previtem", items[static_cast<size_t>(i - 1)]);
    if (i + 1 < len) L.set("nextitem", items[static_cast<size_t>(i + 1)]);
    L.set("cycle", Value::func([i](Evaluator&, CallArgs& a) {
      if (a.pos.empty()) fail(0, "loop.cycle() needs at least one argument");
      return a.pos[static_cast<size_t>(i) % a.pos.size()];
    }));
    assign("loop", loop);
    bind(items[static_cast<size_t>(i)]);
    const Flow f = exec(n.body, out);
    if (f == Flow::Break) break;
  }
  if (len == 0) return exec(n.else_body, out);
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec(const Body& body, std::string& out) {
  const Nest nest(nest_, body.empty() ? 0 : body[0]->line);
  for (const auto& np : body) {
    const Node& n = *np;
    step(n.line);
    try {
      const Flow f = exec_node(n, out);
      if (f != Flow::Normal) return f;
    } catch (TemplateError& e) {
      if (e.line == 0) e.line = n.line;  // raised where no line was at hand (value limits)
      throw;
    }
    check_size(out.size(), n.line);
  }
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec_node(const Node& n, std::string& out) {
  {
    switch (n.k) {
      case Node::Text: out += n.text; break;
      case Node::Output: out += to_str(eval(*n.e), n.line); break;
      case Node::If: {
        bool done = false;
        for (const auto& [c, b] : n.branches) {
          if (truthy(eval(*c))) {
            const Flow f = exec(b, out);
            if (f != Flow::Normal) return f;
            done = true;
            break;
          }
        }
        if (!done) {
          const Flow f = exec(n.else_body, out);
          if (f != Flow::Normal) return f;
        }
        break;
      }
      case Node::For: {
        const Flow f = exec_for(n, out);
        if (f != Flow::Normal) return f;
        break;
      }
      case Node::Set: exec_set(n, eval(*n.e)); break;
      case Node::SetBlock: {
        std::string captured;
        exec(n.body, captured);
        assign(n.targets[0], Value::str(std::move(captured)));
        break;
      }
      case Node::Macro: {
        const Node* m = &n;
        assign(n.text, Value::func([m](Evaluator& ev, CallArgs& a) { return ev.call_macro(*m, a, m->line); }));
        break;
      }
      case Node::Break: return Flow::Break;
      case Node::Continue: return Flow::Continue;
      case Node::Block: return exec(n.body, out);
    }
  }
  return Flow::Normal;
}

std::string render(const Program& p, const Globals& g, const Limits& lim) {
  Evaluator ev(lim, g);
  return ev.run(p);
}

}  // namespace nvfp4::jinja

// Jinja2 parser: tokens to an AST, with jinja2's operator precedence (parser.py): conditional
// expression < or < and < not < comparison < + - < ~ < * / // % < ** < unary - + < primary with
// postfix (. [] ()) and filters/tests. Statements: if/elif/else, for (tuple targets, `if` filter,
// else), set (name, tuple, ns.attr, block), macro, break/continue (loopcontrols), generation
// (transformers' AssistantTracker: its body renders as is). Anything else is refused by name.
#include <cstdlib>

#include "text/jinja.h"

namespace nvfp4::jinja {

namespace {

constexpr int kMaxNesting = 200;

struct Parser {
  const std::vector<Token>& t;
  size_t p = 0;
  int depth = 0;

  const Token& cur() const { return t[p]; }
  const Token& peek(size_t k = 1) const { return t[std::min(p + k, t.size() - 1)]; }
  bool is_op(const char* op) const { return cur().t == Tok::Op && cur().v == op; }
  bool is_name(const char* n) const { return cur().t == Tok::Name && cur().v == n; }
  std::string describe(const Token& k) const {
    switch (k.t) {
      case Tok::Text: return "text";
      case Tok::VarBegin: return "'{{'";
      case Tok::VarEnd: return "'}}'";
      case Tok::BlockBegin: return "'{%'";
      case Tok::BlockEnd: return "'%}'";
      case Tok::Eof: return "end of template";
      case Tok::Str: return "string literal";
      default: return "'" + k.v + "'";
    }
  }
  [[noreturn]] void unexpected(const std::string& expected) {
    fail(cur().line, "syntax error", expected, describe(cur()));
  }
  void expect_op(const char* op) {
    if (!is_op(op)) unexpected(std::string("'") + op + "'");
    ++p;
  }
  std::string expect_name() {
    if (cur().t != Tok::Name) unexpected("a name");
    return t[p++].v;
  }
  void expect(Tok k, const char* what) {
    if (cur().t != k) unexpected(what);
    ++p;
  }
  struct Guard {
    Parser& P;
    explicit Guard(Parser& q) : P(q) {
      if (++P.depth > kMaxNesting) fail(P.cur().line, "template nesting too deep", "at most 200 levels");
    }
    ~Guard() { --P.depth; }
  };

  static ExprP mk(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->k = k;
    e->line = line;
    return e;
  }

  // ---- expressions ----
  ExprP expression(bool with_cond = true) {
    Guard g(*this);
    if (!with_cond) return or_expr();
    ExprP a = or_expr();
    while (is_name("if")) {
      const int line = cur().line;
      ++p;
      ExprP cond = or_expr();
      ExprP other;
      if (is_name("else")) { ++p; other = expression(); }
      auto e = mk(Expr::Cond, line);
      e->kids.push_back(std::move(cond));
      e->kids.push_back(std::move(a));
      e->kids.push_back(std::move(other));  // null: undefined
      a = std::move(e);
    }
    return a;
  }
  ExprP tuple_expr(bool with_cond = true) {
    const int line = cur().line;
    ExprP first = expression(with_cond);
    if (!is_op(",")) return first;
    auto e = mk(Expr::TupleLit, line);
    e->kids.push_back(std::move(first));
    while (is_op(",")) {
      ++p;
      if (cur().t == Tok::VarEnd || cur().t == Tok::BlockEnd || is_op(")")) break;
      e->kids.push_back(expression(with_cond));
    }
    return e;
  }
  ExprP binary(Expr::Kind k, int line, ExprP a, ExprP b, std::string op = "") {
    auto e = mk(k, line);
    e->name = std::move(op);
    e->kids.push_back(std::move(a));
    e->kids.push_back(std::move(b));
    return e;
  }
  ExprP or_expr() {
    ExprP a = and_expr();
    while (is_name("or")) { const int l = cur().line; ++p; a = binary(Expr::Or, l, std::move(a), and_expr()); }
    return a;
  }
  ExprP and_expr() {
    ExprP a = not_expr();
    while (is_name("and")) { const int l = cur().line; ++p; a = binary(Expr::And, l, std::move(a), not_expr()); }
    return a;
  }
  ExprP not_expr() {
    Guard g(*this);
    if (is_name("not")) {
      auto e = mk(Expr::Not, cur().line);
      ++p;
      e->kids.push_back(not_expr());
      return e;
    }
    return compare();
  }
  ExprP compare() {
    const int line = cur().line;
    ExprP a = math1();
    ExprP e;
    for (;;) {
      std::string op;
      if (cur().t == Tok::Op && (cur().v == "==" || cur().v == "!=" || cur().v == "<" || cur().v == "<=" ||
                                 cur().v == ">" || cur().v == ">=")) {
        op = cur().v;
        ++p;
      } else if (is_name("in")) {
        op = "in";
        ++p;
      } else if (is_name("not") && peek().t == Tok::Name && peek().v == "in") {
        op = "not in";
        p += 2;
      } else {
        break;
      }
      if (!e) { e = mk(Expr::Cmp, line); e->kids.push_back(std::move(a)); }
      e->ops.push_back(op);
      e->kids.push_back(math1());
    }
    return e ? std::move(e) : std::move(a);
  }
  ExprP math1() {
    ExprP a = concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = cur().v;
      const int l = cur().line;
      ++p;
      a = binary(Expr::Bin, l, std::move(a), concat(), op);
    }
    return a;
  }
  ExprP concat() {
    ExprP a = math2();
    while (is_op("~")) { const int l = cur().line; ++p; a = binary(Expr::Bin, l, std::move(a), math2(), "~"); }
    return a;
  }
  ExprP math2() {
    ExprP a = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = cur().v;
      const int l = cur().line;
      ++p;
      a = binary(Expr::Bin, l, std::move(a), power(), op);
    }
    return a;
  }
  ExprP power() {
    ExprP a = unary(true);
    while (is_op("**")) { const int l = cur().line; ++p; a = binary(Expr::Bin, l, std::move(a), unary(true), "**"); }
    return a;
  }
  ExprP unary(bool with_filter) {
    Guard g(*this);
    ExprP node;
    if (is_op("-") || is_op("+")) {
      auto e = mk(is_op("-") ? Expr::Neg : Expr::Pos, cur().line);
      ++p;
      e->kids.push_back(unary(false));
      node = std::move(e);
    } else {
      node = primary();
    }
    node = postfix(std::move(node));
    if (with_filter) node = filters(std::move(node));
    return node;
  }
  ExprP primary() {
    Guard g(*this);
    const Token& k = cur();
    if (k.t == Tok::Name) {
      ++p;
      auto e = mk(Expr::Const, k.line);
      if (k.v == "true" || k.v == "True") e->c = Value::boolean(true);
      else if (k.v == "false" || k.v == "False") e->c = Value::boolean(false);
      else if (k.v == "none" || k.v == "None") e->c = Value::none();
      else { e->k = Expr::Name; e->name = k.v; }
      return e;
    }
    if (k.t == Tok::Str) {
      auto e = mk(Expr::Const, k.line);
      std::string s;
      while (cur().t == Tok::Str) s += t[p++].v;
      e->c = Value::str(std::move(s));
      return e;
    }
    if (k.t == Tok::Int) {
      ++p;
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(k.v.c_str(), &end, 10);
      if (errno == ERANGE) fail(k.line, "integer literal out of range", "at most 64 bits", k.v);
      auto e = mk(Expr::Const, k.line);
      e->c = Value::integer(v);
      return e;
    }
    if (k.t == Tok::Float) {
      ++p;
      auto e = mk(Expr::Const, k.line);
      e->c = Value::real(std::strtod(k.v.c_str(), nullptr));
      return e;
    }
    if (is_op("(")) {
      ++p;
      if (is_op(")")) { ++p; auto e = mk(Expr::TupleLit, k.line); return e; }
      ExprP inner = tuple_expr();
      expect_op(")");
      return inner;
    }
    if (is_op("[")) {
      ++p;
      auto e = mk(Expr::ListLit, k.line);
      while (!is_op("]")) {
        if (!e->kids.empty()) expect_op(",");
        if (is_op("]")) break;
        e->kids.push_back(expression());
      }
      ++p;
      return e;
    }
    if (is_op("{")) {
      ++p;
      auto e = mk(Expr::DictLit, k.line);
      while (!is_op("}")) {
        if (!e->kids.empty()) expect_op(",");
        if (is_op("}")) break;
        e->kids.push_back(expression());
        expect_op(":");
        e->kids.push_back(expression());
      }
      ++p;
      return e;
    }
    unexpected("an expression");
  }
  void call_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (!e.kw.empty()) expect_op(",");
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) fail(cur().line, "unsupported construct: *args/**kwargs in a call");
      if (cur().t == Tok::Name && peek().t == Tok::Op && peek().v == "=") {
        e.kw.push_back(cur().v);
        p += 2;
      } else {
        for (const auto& n : e.kw)
          if (!n.empty()) fail(cur().line, "positional argument after a keyword argument");
        e.kw.push_back("");
      }
      e.kids.push_back(expression());
    }
    ++p;
  }
  ExprP postfix(ExprP node) {
    for (;;) {
      const int line = cur().line;
      if (is_op(".")) {
        ++p;
        auto e = mk(Expr::Attr, line);
        if (cur().t == Tok::Name) {
          e->name = t[p++].v;
        } else if (cur().t == Tok::Int) {
          e->k = Expr::Item;
          auto idx = mk(Expr::Const, line);
          idx->c = Value::integer(std::strtoll(t[p++].v.c_str(), nullptr, 10));
          e->kids.push_back(std::move(node));
          e->kids.push_back(std::move(idx));
          node = std::move(e);
          continue;
        } else {
          unexpected("an attribute name");
        }
        e->kids.push_back(std::move(node));
        node = std::move(e);
      } else if (is_op("[")) {
        ++p;
        ExprP parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
          if (!is_op(":") && !is_op("]")) parts[k] = expression();
          if (k < 2 && is_op(":")) { slice = true; ++p; continue; }
          break;
        }
        expect_op("]");
        auto e = mk(slice ? Expr::Slice : Expr::Item, line);
        e->kids.push_back(std::move(node));
        if (!slice && !parts[0]) fail(line, "syntax error", "a subscript", "'[]'");
        for (int k = 0; k < (slice ? 3 : 1); ++k) e->kids.push_back(std::move(parts[k]));
        node = std::move(e);
      } else if (is_op("(")) {
        auto e = mk(Expr::Call, line);
        e->kids.push_back(std::move(node));
        call_args(*e);
        node = std::move(e);
      } else {
        return node;
      }
    }
  }
  ExprP filters(ExprP node) {
    for (;;) {
      const int line = cur().line;
      if (is_op("|")) {
        ++p;
        auto e = mk(Expr::Filter, line);
        e->name = expect_name();
        if (!known_filter(e->name)) fail(line, "unsupported construct: filter '" + e->name + "'");
        e->kids.push_back(std::move(node));
        if (is_op("(")) call_args(*e);
        node = std::move(e);
      } else if (is_name("is")) {
        ++p;
        auto e = mk(Expr::Test, line);
        if (is_name("not")) { e->negate = true; ++p; }
        e->name = expect_name();
        if (!known_test(e->name)) fail(line, "unsupported construct: test '" + e->name + "'");
        e->kids.push_back(std::move(node));
        if (is_op("(")) {
          call_args(*e);
        } else if ((cur().t == Tok::Name || cur().t == Tok::Str || cur().t == Tok::Int || cur().t == Tok::Float ||
                    is_op("(") || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          if (is_name("is")) fail(line, "syntax error: tests cannot be chained with 'is'");
          e->kw.push_back("");
          e->kids.push_back(postfix(primary()));
        }
        node = std::move(e);
      } else if (is_op("(")) {
        auto e = mk(Expr::Call, line);
        e->kids.push_back(std::move(node));
        call_args(*e);
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  // ---- statements ----
  // Parses nodes until a block tag whose name is in `ends` (left current: the name token).
  Body body(std::initializer_list<const char*> ends, const char* construct) {
    Guard g(*this);
    Body out;
    for (;;) {
      const Token& k = cur();
      if (k.t == Tok::Eof) {
        if (ends.size() == 0) return out;
        fail(k.line, std::string("unexpected end of template: '") + construct + "' is not closed",
             std::string("'{% ") + *ends.begin() + " %}'");
      }
      if (k.t == Tok::Text) {
        auto n = std::make_unique<Node>();
        n->k = Node::Text;
        n->line = k.line;
        n->text = k.v;
        out.push_back(std::move(n));
        ++p;
        continue;
      }
      if (k.t == Tok::VarBegin) {
        ++p;
        auto n = std::make_unique<Node>();
        n->k = Node::Output;
        n->line = k.line;
        n->e = tuple_expr();
        expect(Tok::VarEnd, "'}}'");
        out.push_back(std::move(n));
        continue;
      }
      if (k.t != Tok::BlockBegin) unexpected("text, '{{' or '{%'");
      ++p;
      if (cur().t != Tok::Name) unexpected("a statement name");
      for (const char* e : ends)
        if (cur().v == e) return out;
      out.push_back(statement());
    }
  }
  NodeP node(Node::Kind k, int line) {
    auto n = std::make_unique<Node>();
    n->k = k;
    n->line = line;
    return n;
  }
  void end_tag(const char* name) {
    if (!is_name(name)) unexpected(std::string("'") + name + "'");
    ++p;
    expect(Tok::BlockEnd, "'%}'");
  }
  NodeP statement() {
    const Token& k = cur();
    const std::string kw = k.v;
    const int line = k.line;
    ++p;
    if (kw == "if") {
      auto n = node(Node::If, line);
      ExprP c = tuple_expr();
      expect(Tok::BlockEnd, "'%}'");
      for (;;) {
        Body b = body({"elif", "else", "endif"}, "if");
        n->branches.emplace_back(std::move(c), std::move(b));
        if (is_name("elif")) { ++p; c = tuple_expr(); expect(Tok::BlockEnd, "'%}'"); continue; }
        if (is_name("else")) {
          ++p;
          expect(Tok::BlockEnd, "'%}'");
          n->else_body = body({"endif"}, "if");
        }
        end_tag("endif");
        return n;
      }
    }
    if (kw == "for") {
      auto n = node(Node::For, line);
      n->targets.push_back(expect_name());
      while (is_op(",")) { ++p; n->targets.push_back(expect_name()); }
      if (!is_name("in")) unexpected("'in'");
      ++p;
      n->e = tuple_expr(false);
      if (is_name("if")) { ++p; n->cond = expression(); }
      if (is_name("recursive")) fail(cur().line, "unsupported construct: recursive for loop");
      expect(Tok::BlockEnd, "'%}'");
      n->body = body({"else", "endfor"}, "for");
      if (is_name("else")) {
        ++p;
        expect(Tok::BlockEnd, "'%}'");
        n->else_body = body({"endfor"}, "for");
      }
      end_tag("endfor");
      return n;
    }
    if (kw == "set") {
      auto n = node(Node::Set, line);
      n->targets.push_back(expect_name());
      if (is_op(".")) {
        ++p;
        n->attr_set = true;
        n->targets.push_back(expect_name());
      } else {
        while (is_op(",")) { ++p; n->targets.push_back(expect_name()); }
      }
      if (is_op("=")) {
        ++p;
        n->e = tuple_expr();
        expect(Tok::BlockEnd, "'%}'");
        return n;
      }
      if (n->attr_set || n->targets.size() != 1) unexpected("'='");
      if (is_op("|")) fail(cur().line, "unsupported construct: filtered block set");
      expect(Tok::BlockEnd, "'%}'");
      n->k = Node::SetBlock;
      n->body = body({"endset"}, "set");
      end_tag("endset");
      return n;
    }
    if (kw == "macro") {
      auto n = node(Node::Macro, line);
      n->text = expect_name();
      expect_op("(");
      while (!is_op(")")) {
        if (!n->targets.empty()) expect_op(",");
        if (is_op(")")) break;
        n->targets.push_back(expect_name());
        if (is_op("=")) { ++p; n->defaults.push_back(expression()); }
        else n->defaults.push_back(nullptr);
      }
      ++p;
      expect(Tok::BlockEnd, "'%}'");
      n->body = body({"endmacro"}, "macro");
      end_tag("endmacro");
      return n;
    }
    if (kw == "break" || kw == "continue") {
      expect(Tok::BlockEnd, "'%}'");
      return node(kw == "break" ? Node::Break : Node::Continue, line);
    }
    if (kw == "generation") {
      auto n = node(Node::Block, line);
      expect(Tok::BlockEnd, "'%}'");
      n->body = body({"endgeneration"}, "generation");
      end_tag("endgeneration");
      return n;
    }
    fail(line, "unsupported construct: '{% " + kw + " %}'",
         "if, for, set, macro, break, continue or generation");
  }
};

// Loop controls outside a loop are a syntax error in jinja2.
void check_loops(const Body& b, int loops) {
  for (const auto& n : b) {
    if ((n->k == Node::Break || n->k == Node::Continue) && loops == 0)
      fail(n->line, "syntax error: break/continue outside a for loop");
    const int inner = n->k == Node::For ? loops + 1 : n->k == Node::Macro ? 0 : loops;
    check_loops(n->body, inner);
    check_loops(n->else_body, n->k == Node::For ? loops : inner);
    for (const auto& br : n->branches) check_loops(br.second, loops);
  }
}

}  // namespace

Program parse(const std::vector<Token>& toks) {
  Parser P{toks};
  Program prog;
  prog.body = P.body({}, "");
  for (;;) {
    if (P.cur().t == Tok::Eof) break;
    // body({}) returns at a block tag only when its name is in ends, which is empty: unreachable.
    P.unexpected("end of template");
  }
  check_loops(prog.body, 0);
  return prog;
}

}  // namespace nvfp4::jinja

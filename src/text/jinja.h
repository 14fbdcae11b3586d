// The Jinja2 subset that chat templates use, as jinja2 with transformers' environment settings
// (trim_blocks, lstrip_blocks, loopcontrols, tojson = json.dumps(ensure_ascii=False)) renders it.
// Internal to the runtime: lexer (jinja_lexer.cpp), parser to an AST (jinja_parser.cpp), values
// with Python semantics (jinja_value.cpp), filters/tests/methods (jinja_filters.cpp), evaluator
// (jinja_eval.cpp). Public entry: nvfp4::ChatTemplate (include/nvfp4/chat.h).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nvfp4::jinja {

// ---- values -------------------------------------------------------------------------------------
struct Value;
struct Dict;
struct Object;
struct CallArgs;
class Evaluator;
using List = std::vector<Value>;
using Func = std::function<Value(Evaluator&, CallArgs&)>;

enum class Type { Undefined, None, Bool, Int, Float, Str, List, Dict, Object, Func };

struct Value {
  Type t = Type::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                   // Str; the name of an Undefined
  std::shared_ptr<List> l;         // List (tuple: tuple = true)
  std::shared_ptr<Dict> d;         // Dict
  std::shared_ptr<Object> o;       // Object: namespace(), loop
  std::shared_ptr<const Func> fn;  // Func (macro, global, bound method)
  bool tuple = false;
  uint32_t depth = 0;              // List/Dict nesting (bounded: kMaxNesting)

  static Value none() { Value v; v.t = Type::None; return v; }
  static Value undefined(std::string name = "") { Value v; v.s = std::move(name); return v; }
  static Value boolean(bool x) { Value v; v.t = Type::Bool; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.t = Type::Int; v.i = x; return v; }
  static Value real(double x) { Value v; v.t = Type::Float; v.f = x; return v; }
  static Value str(std::string x) { Value v; v.t = Type::Str; v.s = std::move(x); return v; }
  static Value list(List x = {}, bool tuple = false);  // throws past kMaxNesting levels
  static Value dict();
  static Value func(Func f);
  bool is_undefined() const { return t == Type::Undefined; }
  bool is_num() const { return t == Type::Int || t == Type::Float || t == Type::Bool; }
};

// Lists and dicts nest at most this deep (recursion in repr, ==, tojson and destruction).
constexpr uint32_t kMaxNesting = 256;
// Evaluation recursion (expressions within expressions, bodies, macro calls) stops here: a few
// MiB of stack at most, sanitizers included.
constexpr int kMaxRecursion = 600;
// Sets d.depth from its items (after building a dict); throws past kMaxNesting.
void seal_dict(Value& d);

struct Dict {
  std::vector<std::pair<std::string, Value>> items;  // insertion order, as Python's dict
  const Value* find(const std::string& k) const;
  void set(const std::string& k, Value v);
};

struct Object {
  std::string kind;  // "namespace", "loop"
  Dict attrs;
  bool mutable_attrs = false;
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The argument `name` at position `idx` (or keyword); nullptr when absent.
  const Value* get(size_t idx, const std::string& name) const;
};

// A template error before the source name is known to it: the evaluator and parser throw this,
// ChatTemplate turns it into nvfp4::Error naming the template.
struct TemplateError {
  int line;
  std::string rule, expected, found;
};
[[noreturn]] void fail(int line, std::string rule, std::string expected = "", std::string found = "");

// Python semantics.
bool truthy(const Value& v);
std::string to_str(const Value& v, int line);   // str(v); Undefined -> ""
std::string repr(const Value& v, int line);     // repr(v)
std::string type_name(const Value& v);
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b, int line);  // <0, 0, >0; TypeError -> fail
// json.dumps(v, ensure_ascii=False, indent=indent (<0: None), sort_keys)
std::string to_json(const Value& v, int indent, bool sort_keys, int line);
double as_double(const Value& v);

// UTF-8 helpers (code points; the input is valid UTF-8, checked at render entry).
std::vector<uint32_t> decode_utf8(const std::string& s);
std::string encode_utf8(const std::vector<uint32_t>& cps, size_t b = 0, size_t e = SIZE_MAX);
void append_utf8(std::string& out, uint32_t cp);
bool utf8_valid(const std::string& s);
bool py_isspace(uint32_t cp);
size_t utf8_length(const std::string& s);

// ---- lexer --------------------------------------------------------------------------------------
enum class Tok { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, Str, Int, Float, Op, Eof };
struct Token {
  Tok t;
  std::string v;
  int line;
};
std::vector<Token> lex(const std::string& source);

// ---- AST ----------------------------------------------------------------------------------------
struct Expr;
using ExprP = std::unique_ptr<Expr>;
struct Expr {
  enum Kind { Const, Name, Attr, Item, Slice, Call, Filter, Test, Neg, Pos, Not, And, Or, Bin,
              Cmp, Cond, ListLit, TupleLit, DictLit } k;
  int line = 0;
  Value c;                  // Const
  std::string name;         // Name, Attr, Filter, Test; Bin/Cmp operator
  std::vector<ExprP> kids;  // operands (Slice: obj, start, stop, step with nulls)
  std::vector<std::string> kw;  // Call/Filter/Test: keyword names of kids after the first ("" = positional)
  std::vector<std::string> ops; // Cmp: operators between kids
  bool negate = false;      // Test: `is not`
};

struct Node;
using NodeP = std::unique_ptr<Node>;
using Body = std::vector<NodeP>;
struct Node {
  enum Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, Block } k;
  int line = 0;
  std::string text;                        // Text
  ExprP e;                                 // Output, Set value, For iterable
  ExprP cond;                              // For filter
  std::vector<std::string> targets;        // Set/For names; Set attr: {ns, attr} with attr_set
  bool attr_set = false;
  std::vector<std::pair<ExprP, Body>> branches;  // If (cond, body)...
  Body body, else_body;                    // For, Macro, SetBlock, Block, If else
  std::vector<ExprP> defaults;             // Macro: default per parameter (null: required)
};

struct Program {
  Body body;
};
Program parse(const std::vector<Token>& toks);

// ---- evaluation ---------------------------------------------------------------------------------
struct Limits {
  size_t max_output = 1 << 24;  // bytes of output and of any one string made
  uint64_t max_steps = 50'000'000;
  int max_depth = 64;           // macro calls and nested evaluation
};

struct Globals {
  std::vector<std::pair<std::string, Value>> vars;
};

std::string render(const Program& p, const Globals& g, const Limits& lim);

class Evaluator {
 public:
  Evaluator(const Limits& lim, const Globals& g);
  std::string run(const Program& p);

  Value eval(const Expr& e);
  Value call(const Value& f, CallArgs& a, int line);
  Value getattr(const Value& obj, const std::string& name, int line);
  Value getitem(const Value& obj, const Value& key, int line);
  // Counts one step of work; throws when the template runs past Limits::max_steps.
  void step(int line);
  // Throws when a string of `n` bytes would pass Limits::max_output.
  void check_size(size_t n, int line) const;
  const Limits& limits() const { return lim_; }
  // Counts `n` steps (work proportional to n items copied).
  void charge(uint64_t n, int line);
  // Namespaces are the only mutable values and so the only way to a reference
  // cycle; the evaluator empties them when it ends, which breaks any cycle.
  void track(const std::shared_ptr<Object>& o) { objects_.push_back(o); }
  ~Evaluator();
  // The items a for loop over `v` sees (list items, string characters, dict keys).
  std::vector<Value> iterate(const Value& v, int line);

 private:
  enum class Flow { Normal, Break, Continue };
  Flow exec(const Body& b, std::string& out);
  Flow exec_for(const Node& n, std::string& out);
  Flow exec_node(const Node& n, std::string& out);
  void exec_set(const Node& n, Value v);
  Value call_macro(const Node& m, CallArgs& a, int line);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  Value binop(const std::string& op, const Value& a, const Value& b, int line);
  Value cmp(const Expr& e);

  const Limits& lim_;
  std::vector<std::map<std::string, Value>> scopes_;
  uint64_t steps_ = 0;
  std::vector<std::shared_ptr<Object>> objects_;
  int depth_ = 0;
  int nest_ = 0;  // eval/exec recursion, bounded by kMaxRecursion (the C++ stack)
  struct Nest {
    int& n;
    Nest(int& x, int line) : n(x) {
      if (++n > kMaxRecursion) { --n; fail(line, "template nests too deep", "at most 600 levels of calls and expressions"); }
    }
    ~Nest() { --n; }
  };
};

// Filters, tests and methods (jinja_filters.cpp).
Value apply_filter(Evaluator& ev, const std::string& name, Value in, CallArgs& a, int line);
bool apply_test(Evaluator& ev, const std::string& name, const Value& in, CallArgs& a, int line);
// Whether a filter/test name is one this interpreter has (checked at parse time, as jinja2 does).
bool known_filter(const std::string& name);
bool known_test(const std::string& name);
// Attribute `name` of a str/dict/list value that is a method (bound); Undefined when none.
Value method(const Value& self, const std::string& name, int line);

}  // namespace nvfp4::jinja

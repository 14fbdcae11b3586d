// Gemma 4 tool calls: the body of one <|tool_call>...<tool_call|> block, `call:NAME{ARGS}`, to a
// call with its arguments as JSON (see tool_calls.h).
//
// ARGS is the format Gemma 4's chat template writes (its format_argument macro) and the model
// answers in: `key:value` pairs separated by ',', keys bare (or between <|"|> marks), strings
// between <|"|> marks (no escapes: the text is taken as it is), objects in {}, arrays in [],
// true/false, and numbers; null also as None (what the template prints for a null). Other bare
// text is a string, as vLLM's gemma4 parser reads it. Anything that does not parse whole, or nests
// deeper than 64, is no call (the block stays content).
#include <nlohmann/json.hpp>

#include <optional>

#include "server/tool_calls.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

constexpr std::string_view kQuote = "<|\"|>";
constexpr int kMaxDepth = 64;

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

class ArgsReader {
 public:
  explicit ArgsReader(std::string_view s) : s_(s) {}

  // `{...}` from the current position (at '{').
  std::optional<OJson> object(int depth) {
    if (depth > kMaxDepth || !eat('{')) return std::nullopt;
    OJson o = OJson::object();
    skip_ws();
    if (eat('}')) return o;
    for (;;) {
      skip_ws();
      auto k = key();
      if (!k || !eat(':')) return std::nullopt;
      skip_ws();
      auto v = value(depth + 1, '}');
      if (!v) return std::nullopt;
      o[*k] = std::move(*v);
      skip_ws();
      if (eat('}')) return o;
      if (!eat(',')) return std::nullopt;
    }
  }

  bool at_end() const { return i_ == s_.size(); }

 private:
  std::optional<OJson> array(int depth) {
    if (depth > kMaxDepth || !eat('[')) return std::nullopt;
    OJson a = OJson::array();
    skip_ws();
    if (eat(']')) return a;
    for (;;) {
      skip_ws();
      auto v = value(depth + 1, ']');
      if (!v) return std::nullopt;
      a.push_back(std::move(*v));
      skip_ws();
      if (eat(']')) return a;
      if (!eat(',')) return std::nullopt;
    }
  }

  std::optional<OJson> value(int depth, char closer) {
    if (rest().substr(0, kQuote.size()) == kQuote) {
      auto q = quoted();
      if (!q) return std::nullopt;
      return OJson(std::move(*q));
    }
    if (peek() == '{') return object(depth);
    if (peek() == '[') return array(depth);
    // A bare value runs to the next ',' or closer.
    size_t e = i_;
    while (e < s_.size() && s_[e] != ',' && s_[e] != closer && s_[e] != '{' && s_[e] != '[') ++e;
    std::string_view text = s_.substr(i_, e - i_);
    while (!text.empty() && is_ws(text.back())) text.remove_suffix(1);
    if (text.empty() || text.find(kQuote) != std::string_view::npos) return std::nullopt;
    i_ = e;
    if (text == "true") return OJson(true);
    if (text == "false") return OJson(false);
    if (text == "null" || text == "None") return OJson(nullptr);
    const OJson n = OJson::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (!n.is_discarded() && n.is_number()) return n;
    return OJson(std::string(text));
  }

  // A key: <|"|>text<|"|>, or the bare text up to ':' (not empty, no markup).
  std::optional<std::string> key() {
    if (rest().substr(0, kQuote.size()) == kQuote) return quoted();
    const size_t e = s_.find(':', i_);
    if (e == std::string_view::npos) return std::nullopt;
    std::string_view k = s_.substr(i_, e - i_);
    while (!k.empty() && is_ws(k.back())) k.remove_suffix(1);
    if (k.empty() || k.find_first_of("{}[],<>\"\n") != std::string_view::npos) return std::nullopt;
    i_ = e;
    return std::string(k);
  }

  std::optional<std::string> quoted() {
    i_ += kQuote.size();
    const size_t e = s_.find(kQuote, i_);
    if (e == std::string_view::npos) return std::nullopt;
    std::string t(s_.substr(i_, e - i_));
    i_ = e + kQuote.size();
    return t;
  }

  std::string_view rest() const { return s_.substr(i_); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  void skip_ws() {
    while (i_ < s_.size() && is_ws(s_[i_])) ++i_;
  }

  std::string_view s_;
  size_t i_ = 0;
};

// A function name: letters, digits, '_', '-', '.' (vLLM's gemma4 parser's [\w\-\.]+, ASCII).
bool plain_name(std::string_view n) {
  if (n.empty() || n.size() > 256) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

}  // namespace

std::vector<ParsedToolCall> gemma4_calls(std::string_view body) {
  while (!body.empty() && is_ws(body.front())) body.remove_prefix(1);
  while (!body.empty() && is_ws(body.back())) body.remove_suffix(1);
  if (body.substr(0, 5) != "call:") return {};
  body.remove_prefix(5);
  const size_t brace = body.find('{');
  if (brace == std::string_view::npos || !plain_name(body.substr(0, brace))) return {};
  ArgsReader r(body.substr(brace));
  const auto args = r.object(0);
  if (!args || !r.at_end()) return {};
  ParsedToolCall c;
  c.name = std::string(body.substr(0, brace));
  c.arguments = args->dump(-1, ' ', false, OJson::error_handler_t::replace);
  return {std::move(c)};
}

}  // namespace nvfp4::server

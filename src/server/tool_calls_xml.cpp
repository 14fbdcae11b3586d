// XML-like tool calls: QwenXml (Qwen3.5/3.6, Qwen3-Coder), the body of one <tool_call> block, and
// Atem (Muse Glimmer), the body of one tool message; each parameter's text to a JSON value by the
// type the request's tool schema gives it (see tool_calls.h).
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "server/tool_calls.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

constexpr std::string_view kFunctionOpen = "<function=", kFunctionClose = "</function>";
constexpr std::string_view kParamOpen = "<parameter=", kParamClose = "</parameter>";
constexpr std::string_view kAtemOpen = "<atem:function_calls>", kAtemClose = "</atem:function_calls>";
constexpr std::string_view kInvokeOpen = "<atem:invoke name=\"", kInvokeClose = "</atem:invoke>";
constexpr std::string_view kAtemParamOpen = "<atem:parameter name=\"", kAtemParamClose = "</atem:parameter>";

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::optional<OJson> parse_json(std::string_view s) {
  int deepest = 0;
  OJson j = OJson::parse(
      s.begin(), s.end(),
      [&](int d, OJson::parse_event_t, OJson&) {
        deepest = std::max(deepest, d);
        return deepest <= 64;
      },
      /*allow_exceptions=*/false);
  if (j.is_discarded() || deepest > 64) return std::nullopt;
  return j;
}

// A name between '=' and '>': not empty, on one line, no markup.
bool plain_name(std::string_view n) {
  return !n.empty() && n.size() <= 256 && n.find_first_of("<>\n\r") == std::string_view::npos;
}

// vLLM's qwen3_coder parser's _convert_param_value: the parameter's text as JSON by its type.
OJson value_of(std::string_view text, const std::string* type) {
  const std::string t(text);
  if (lower(t) == "null") return nullptr;
  if (!type) return t;  // a parameter the schema does not name stays text
  const std::string ty = lower(*type);
  if (ty == "string" || ty == "str" || ty == "text" || ty == "varchar" || ty == "char" || ty == "enum") return t;
  if (starts_with(ty, "int") || starts_with(ty, "uint") || starts_with(ty, "long") || starts_with(ty, "short") ||
      starts_with(ty, "unsigned")) {
    const std::string_view v = trim(text);
    if (v.empty() || v.size() > 19) return t;
    char* end = nullptr;
    errno = 0;
    const std::string vs(v);
    const long long n = std::strtoll(vs.c_str(), &end, 10);
    if (errno != 0 || end != vs.c_str() + vs.size()) return t;
    return n;
  }
  if (starts_with(ty, "num") || starts_with(ty, "float")) {
    const std::string vs(trim(text));
    if (vs.empty()) return t;
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(vs.c_str(), &end);
    if (errno != 0 || end != vs.c_str() + vs.size() || !std::isfinite(d)) return t;
    if (d == std::trunc(d) && std::fabs(d) < 9.0e15) return static_cast<long long>(d);  // 3.0 -> 3, as vLLM
    return d;
  }
  if (ty == "boolean" || ty == "bool" || ty == "binary") return lower(trim(text)) == "true";
  // object, array and anything else: JSON when it is JSON, else the text.
  if (const auto j = parse_json(trim(text))) return *j;
  return t;
}

// The parameter value as the template writes it: one newline after '>' and one before the close.
std::string_view unwrap(std::string_view v) {
  if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
  if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
  return v;
}

}  // namespace

ParamTypes param_types_of(const std::string& tools_json) {
  ParamTypes out;
  if (tools_json.empty()) return out;
  const auto j = parse_json(tools_json);
  if (!j || !j->is_array()) return out;
  for (const auto& tool : *j) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) continue;
    const auto& f = tool["function"];
    if (!f.contains("name") || !f["name"].is_string()) continue;
    auto& params = out[f["name"].get<std::string>()];
    if (!f.contains("parameters") || !f["parameters"].is_object()) continue;
    const auto& p = f["parameters"];
    if (!p.contains("properties") || !p["properties"].is_object()) continue;
    for (const auto& [name, schema] : p["properties"].items()) {
      std::string type = "string";  // vLLM: a property without a type is a string
      if (schema.is_object() && schema.contains("type")) {
        const auto& t = schema["type"];
        if (t.is_string()) {
          type = t.get<std::string>();
        } else if (t.is_array()) {  // ["integer", "null"]: the first that is not null
          type = "object";
          for (const auto& e : t)
            if (e.is_string() && e.get<std::string>() != "null") {
              type = e.get<std::string>();
              break;
            }
        }
      }
      params[name] = type;
    }
  }
  return out;
}

std::vector<ParsedToolCall> qwen_xml_calls(std::string_view body, const ParamTypes& types) {
  std::vector<ParsedToolCall> out;
  std::string_view s = trim(body);
  if (!starts_with(s, kFunctionOpen)) return {};
  while (!s.empty()) {
    if (!starts_with(s, kFunctionOpen)) return {};
    s.remove_prefix(kFunctionOpen.size());
    const size_t gt = s.find('>');
    if (gt == std::string_view::npos) return {};
    ParsedToolCall c;
    c.name = std::string(trim(s.substr(0, gt)));
    if (!plain_name(c.name)) return {};
    s.remove_prefix(gt + 1);
    const size_t fe = s.find(kFunctionClose);
    std::string_view fbody = fe == std::string_view::npos ? s : s.substr(0, fe);  // unclosed at the end: tolerated
    s = fe == std::string_view::npos ? std::string_view() : trim(s.substr(fe + kFunctionClose.size()));
    const auto fit = types.find(c.name);
    OJson args = OJson::object();
    for (;;) {
      const size_t po = fbody.find(kParamOpen);
      if (po == std::string_view::npos) {
        if (!trim(fbody).empty()) return {};  // stray text inside the function: not a call
        break;
      }
      if (!trim(fbody.substr(0, po)).empty()) return {};
      fbody.remove_prefix(po + kParamOpen.size());
      const size_t pgt = fbody.find('>');
      if (pgt == std::string_view::npos) return {};
      const std::string pname(trim(fbody.substr(0, pgt)));
      if (!plain_name(pname)) return {};
      fbody.remove_prefix(pgt + 1);
      // The value ends at </parameter>, or (a close left out) at the next parameter or the end.
      size_t ve = fbody.find(kParamClose);
      size_t skip = kParamClose.size();
      if (const size_t next = fbody.find(kParamOpen); next < ve) {
        ve = next;
        skip = 0;
      }
      if (ve == std::string_view::npos) {
        ve = fbody.size();
        skip = 0;
      }
      const std::string* type = nullptr;
      if (fit != types.end())
        if (const auto t = fit->second.find(pname); t != fit->second.end()) type = &t->second;
      args[pname] = value_of(unwrap(fbody.substr(0, ve)), type);
      fbody.remove_prefix(ve + skip);
    }
    c.arguments = args.dump(-1, ' ', false, OJson::error_handler_t::replace);
    out.push_back(std::move(c));
  }
  return out;
}

// As the template writes them (render_atem): <atem:function_calls>\n, then per call
// <atem:invoke name="NAME">\n and per parameter <atem:parameter name="KEY">VALUE</atem:parameter>\n,
// then </atem:invoke>\n</atem:function_calls>. Whitespace between the tags is free; anything else
// outside a value makes the body not a call. A value is the text up to the first close.
std::vector<ParsedToolCall> atem_calls(std::string_view body, const ParamTypes& types) {
  std::string_view s = trim(body);
  if (!starts_with(s, kAtemOpen)) return {};
  s.remove_prefix(kAtemOpen.size());
  const size_t close = s.rfind(kAtemClose);
  if (close == std::string_view::npos || !trim(s.substr(close + kAtemClose.size())).empty()) return {};
  s = trim(s.substr(0, close));
  std::vector<ParsedToolCall> out;
  while (!s.empty()) {
    if (!starts_with(s, kInvokeOpen)) return {};
    s.remove_prefix(kInvokeOpen.size());
    const size_t q = s.find("\">");
    if (q == std::string_view::npos) return {};
    ParsedToolCall c;
    c.name = std::string(s.substr(0, q));
    if (!plain_name(c.name) || c.name.find('"') != std::string::npos) return {};
    s.remove_prefix(q + 2);
    const size_t ie = s.find(kInvokeClose);
    if (ie == std::string_view::npos) return {};
    std::string_view params = trim(s.substr(0, ie));
    s = trim(s.substr(ie + kInvokeClose.size()));
    const auto fit = types.find(c.name);
    OJson args = OJson::object();
    while (!params.empty()) {
      if (!starts_with(params, kAtemParamOpen)) return {};
      params.remove_prefix(kAtemParamOpen.size());
      const size_t pq = params.find("\">");
      if (pq == std::string_view::npos) return {};
      const std::string pname(params.substr(0, pq));
      if (!plain_name(pname) || pname.find('"') != std::string::npos) return {};
      params.remove_prefix(pq + 2);
      const size_t ve = params.find(kAtemParamClose);
      if (ve == std::string_view::npos) return {};
      const std::string* type = nullptr;
      if (fit != types.end())
        if (const auto t = fit->second.find(pname); t != fit->second.end()) type = &t->second;
      args[pname] = value_of(params.substr(0, ve), type);
      params = trim(params.substr(ve + kAtemParamClose.size()));
    }
    c.arguments = args.dump(-1, ' ', false, OJson::error_handler_t::replace);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace nvfp4::server

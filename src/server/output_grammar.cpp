// Requests' output constraints (see output_grammar.h).
#include "server/output_grammar.h"

#include <xgrammar/grammar.h>

#include "server/api_error.h"
#include "server/ebnf_literal.h"
#include "server/gemma4_call_ebnf.h"
#include "server/atem_call_ebnf.h"
#include "server/qwen_xml_call_ebnf.h"
#include "server/schema_guard.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

// JSON is written on one line with ", " and ": " between items (OpenAI's strict outputs and
// models' tool calls look so): free whitespace lets a small model pad runs of newlines between
// every token (measured on SmolLM2 with xgrammar's any_whitespace: most of a 200-token budget).

[[noreturn]] void bad(const std::string& name, const std::string& msg, const char* code = "invalid_value") {
  throw ApiError(400, "'" + name + "' " + msg, name, code);
}

const OJson* field(const OJson& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

// xgrammar's message without the source location its errors start with ("[time] file:line: ").
std::string reason(const std::exception& e) {
  std::string m = e.what();
  if (const size_t p = m.find(".cc:"); p != std::string::npos)
    if (const size_t q = m.find(": ", p); q != std::string::npos) m = m.substr(q + 2);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

// Converts with f; xgrammar's refusal becomes a 400 naming `name`.
template <class F>
std::shared_ptr<const GrammarSpec> convert(const std::string& name, const char* what, F&& f) {
  try {
    auto s = std::make_shared<GrammarSpec>();
    s->grammar = std::make_shared<const xgrammar::Grammar>(f());
    s->field = name;
    return s;
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    bad(name, std::string("is not a valid ") + what + ": " + reason(e));
  }
}

xgrammar::Grammar schema_of(const OJson& schema) {
  return xgrammar::Grammar::FromJSONSchema(schema.dump(), /*any_whitespace=*/false, /*indent=*/std::nullopt,
                                           std::pair<std::string, std::string>(", ", ": "), /*strict_mode=*/true);
}

// json_object's grammar: any JSON object, compact or pretty-printed as models write it. A run of
// whitespace is one newline at most, then up to 16 spaces, and none goes before a colon or a
// comma. (A schema's output is one line, as OpenAI's strict outputs are; with no schema the model
// chooses its layout, and SmolLM2 sampled at 0.8 wanders off once kept from the newline it wants
// after "{".)
constexpr const char* kJsonObjectEbnf = R"(root ::= object
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( "}" | member ( "," ws member )* ws "}" )
member ::= string ":" ws value
array ::= "[" ws ( "]" | value ( "," ws value )* ws "]" )
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+-]? [0-9]+ )?
ws ::= "\n"? [ ]{0,16}
)";

std::shared_ptr<const GrammarSpec> object_grammar(const std::string& name) {
  return convert(name, "grammar", [] { return xgrammar::Grammar::FromEBNF(kJsonObjectEbnf, "root"); });
}

std::shared_ptr<const GrammarSpec> string_grammar(const OJson& v, const std::string& name, const char* kind) {
  if (!v.is_string()) bad(name, "must be a string", "invalid_type");
  const std::string& s = v.get_ref<const std::string&>();
  if (std::string(kind) == "regex") return convert(name, "regular expression", [&] { return xgrammar::Grammar::FromRegex(s); });
  return convert(name, "GBNF grammar", [&] { return xgrammar::Grammar::FromEBNF(s, "root"); });
}

std::shared_ptr<const GrammarSpec> choice_grammar(const OJson& v, const std::string& name) {
  if (!v.is_array() || v.empty()) bad(name, "must be a non-empty array of strings", "invalid_type");
  std::string ebnf = "root ::= ";
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) bad(name + "[" + std::to_string(i) + "]", "must be a string", "invalid_type");
    ebnf += (i ? " | " : "") + ebnf_literal(v[i].get<std::string>());
  }
  return convert(name, "choice", [&] { return xgrammar::Grammar::FromEBNF(ebnf, "root"); });
}

// A tool's parameters placed inside the call's schema: its $defs (and definitions) move to the
// root's $defs under `prefix`, and its local references follow them.
void hoist_defs(OJson& s, OJson& root_defs, const std::string& prefix) {
  for (const char* k : {"$defs", "definitions"}) {
    if (!s.is_object() || !s.contains(k) || !s[k].is_object()) continue;
    for (auto it = s[k].begin(); it != s[k].end(); ++it) root_defs[prefix + it.key()] = it.value();
    s.erase(k);
  }
}
void move_refs(OJson& s, const std::string& prefix) {
  if (s.is_object()) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() == "$ref" && it->is_string()) {
        const std::string& r = it->get_ref<const std::string&>();
        for (const char* from : {"#/$defs/", "#/definitions/"})
          if (r.rfind(from, 0) == 0) {
            *it = "#/$defs/" + prefix + r.substr(std::string(from).size());
            break;
          }
      } else if (it.key() != "enum" && it.key() != "const") {
        move_refs(*it, prefix);
      }
    }
  } else if (s.is_array()) {
    for (auto& e : s) move_refs(e, prefix);
  }
}

}  // namespace

std::shared_ptr<const GrammarSpec> json_schema_grammar(const OJson& schema, const std::string& path) {
  check_schema_supported(schema, path);
  return convert(path, "JSON schema", [&] { return schema_of(exact_formats(schema)); });
}

std::shared_ptr<const GrammarSpec> response_format_grammar(const OJson& rf, const std::string& name, bool flat) {
  if (!rf.is_object()) bad(name, "must be an object, found " + std::string(rf.type_name()), "invalid_type");
  const OJson* type = field(rf, "type");
  if (!type) bad(name + ".type", "is required", "missing_field");
  if (!type->is_string()) bad(name + ".type", "must be a string", "invalid_type");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return nullptr;
  if (t == "json_object") return object_grammar(name);
  if (t != "json_schema") bad(name + ".type", "must be \"text\", \"json_object\" or \"json_schema\"");
  const std::string js = flat ? name : name + ".json_schema";
  const OJson* spec = flat ? &rf : field(rf, "json_schema");
  if (!spec) bad(js, "is required when type is \"json_schema\"", "missing_field");
  if (!spec->is_object()) bad(js, "must be an object", "invalid_type");
  const OJson* n = field(*spec, "name");
  if (!n) bad(js + ".name", "is required", "missing_field");
  if (!n->is_string() || n->get_ref<const std::string&>().empty() || n->get_ref<const std::string&>().size() > 64)
    bad(js + ".name", "must be a string of 1 to 64 characters");
  if (const OJson* s = field(*spec, "strict"); s && !s->is_boolean()) bad(js + ".strict", "must be a boolean", "invalid_type");
  const OJson* schema = field(*spec, "schema");
  if (!schema) return object_grammar(js);  // OpenAI: any object then
  return json_schema_grammar(*schema, js + ".schema");
}

std::shared_ptr<const GrammarSpec> body_output_grammar(const std::string& body) {
  const OJson j = OJson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw ApiError(400, "the request body is not valid JSON", "", "invalid_json");
  std::shared_ptr<const GrammarSpec> out;
  std::string first;
  const auto take = [&](const std::string& name, std::shared_ptr<const GrammarSpec> g) {
    if (!g) return;
    if (out) bad(name, "constrains the output too; '" + first + "' already does (send one)");
    out = std::move(g);
    first = name;
  };
  if (const OJson* rf = field(j, "response_format")) take("response_format", response_format_grammar(*rf, "response_format", false));
  if (const OJson* g = field(j, "grammar")) take("grammar", string_grammar(*g, "grammar", "gbnf"));
  if (const OJson* s = field(j, "json_schema")) take("json_schema", json_schema_grammar(*s, "json_schema"));
  if (const OJson* g = field(j, "guided_grammar")) take("guided_grammar", string_grammar(*g, "guided_grammar", "gbnf"));
  if (const OJson* g = field(j, "guided_regex")) take("guided_regex", string_grammar(*g, "guided_regex", "regex"));
  if (const OJson* g = field(j, "guided_choice")) take("guided_choice", choice_grammar(*g, "guided_choice"));
  if (const OJson* s = field(j, "guided_json"))
    take("guided_json", s->is_string() ? json_schema_grammar(OJson::parse(s->get<std::string>(), nullptr, false), "guided_json")
                                       : json_schema_grammar(*s, "guided_json"));
  if (const OJson* so = field(j, "structured_outputs")) {
    if (!so->is_object()) bad("structured_outputs", "must be an object", "invalid_type");
    if (const OJson* s = field(*so, "json"))
      take("structured_outputs.json",
           s->is_string() ? json_schema_grammar(OJson::parse(s->get<std::string>(), nullptr, false), "structured_outputs.json")
                          : json_schema_grammar(*s, "structured_outputs.json"));
    if (const OJson* g = field(*so, "regex")) take("structured_outputs.regex", string_grammar(*g, "structured_outputs.regex", "regex"));
    if (const OJson* g = field(*so, "grammar"))
      take("structured_outputs.grammar", string_grammar(*g, "structured_outputs.grammar", "gbnf"));
    if (const OJson* g = field(*so, "choice")) take("structured_outputs.choice", choice_grammar(*g, "structured_outputs.choice"));
    if (const OJson* g = field(*so, "json_object"); g && g->is_boolean() && g->get<bool>())
      take("structured_outputs.json_object", object_grammar("structured_outputs.json_object"));
  }
  return out;
}

// A call in a syntax of its own, from its EBNF builder (gemma4_call_ebnf.h: Gemma 4's
// <|tool_call>call:NAME{...}; qwen_xml_call_ebnf.h: Qwen3.5/3.6's XML; atem_call_ebnf.h: Muse
// Glimmer's tool message): one of the offered tools
// (the named one), its arguments held to the tool's parameters. `markers`: the special tokens'
// texts the call holds.
static std::shared_ptr<const GrammarSpec> ebnf_call_grammar(std::string (*build)(const OJson&, const std::string&), const char* markers,
                                                     const std::string& tools_json, const std::string& only) {
  const OJson tools = OJson::parse(tools_json, nullptr, false);
  if (!tools.is_array()) return nullptr;
  const std::string ebnf = build(tools, only);
  if (ebnf.empty()) return nullptr;
  auto s = convert("tools", "tool schema", [&] { return xgrammar::Grammar::FromEBNF(ebnf, "root"); });
  auto m = std::make_shared<GrammarSpec>(*s);
  m->markers = markers;
  return m;
}

static std::shared_ptr<const GrammarSpec> call_grammar(ToolFormat f, const std::string& tools_json, const std::string& only);

// `call` after an open reasoning block: reasoning without `close`, `close`, blank space, the call.
// (A marker whose first character recurs in it cannot be written so; the call alone then.)
static std::shared_ptr<const GrammarSpec> after_reasoning(std::shared_ptr<const GrammarSpec> call, const std::string& close) {
  if (!call || close.size() < 2 || close.find(close[0], 1) != std::string::npos) return call;
  auto s = convert("tools", "tool schema", [&] {
    const auto pre = xgrammar::Grammar::FromEBNF(
        "root ::= reasoning " + ebnf_literal(close) + " [ \\n]*\n" + ebnf_text_without("reasoning", {close}), "root");
    return xgrammar::Grammar::Concat({pre, *call->grammar});
  });
  auto m = std::make_shared<GrammarSpec>(*s);
  m->markers = call->markers + close;
  return m;
}

std::shared_ptr<const GrammarSpec> tool_call_grammar(ToolFormat f, const std::string& tools_json, const std::string& only,
                                                     const std::string& reasoning_close) {
  return reasoning_close.empty() ? call_grammar(f, tools_json, only) : after_reasoning(call_grammar(f, tools_json, only), reasoning_close);
}

static std::shared_ptr<const GrammarSpec> call_grammar(ToolFormat f, const std::string& tools_json, const std::string& only) {
  if (f == ToolFormat::Gemma4) return ebnf_call_grammar(gemma4_call_ebnf, "<|tool_call><tool_call|><|\"|>", tools_json, only);
  if (f == ToolFormat::QwenXml) return ebnf_call_grammar(qwen_xml_call_ebnf, "<tool_call></tool_call>", tools_json, only);
  if (f == ToolFormat::Atem) return ebnf_call_grammar(atem_call_ebnf, "<|message|><|eom|><|start|>", tools_json, only);
  const char* args_key = "arguments";
  std::string prefix, suffix;
  switch (f) {
    case ToolFormat::Hermes:
      prefix = "<tool_call>\n";
      suffix = "\n</tool_call>";
      break;
    case ToolFormat::Llama3: args_key = "parameters"; break;
    case ToolFormat::Mistral:
      prefix = "[TOOL_CALLS][";
      suffix = "]";
      break;
    default: return nullptr;
  }
  const OJson tools = OJson::parse(tools_json, nullptr, false);
  if (!tools.is_array()) return nullptr;
  OJson calls = OJson::array();
  OJson defs = OJson::object();
  for (size_t i = 0; i < tools.size(); ++i) {
    const OJson& fn = tools[i]["function"];
    const std::string& name = fn["name"].get_ref<const std::string&>();
    if (!only.empty() && name != only) continue;
    const std::string pp = "tools[" + std::to_string(i) + "].function.parameters";
    OJson args = {{"type", "object"}, {"additionalProperties", true}};  // no parameters: any object
    if (const OJson* p = field(fn, "parameters")) {
      check_schema_supported(*p, pp);
      args = exact_formats(*p);
      if (args.is_object() && !args.contains("type") && !args.contains("$ref") && !args.contains("anyOf"))
        args["type"] = "object";
      const std::string prefix = "tool" + std::to_string(i) + "_";
      move_refs(args, prefix);  // (the references inside its $defs too, before they move)
      hoist_defs(args, defs, prefix);
    }
    calls.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", name}}}, {args_key, args}}},
                     {"required", {"name", args_key}},
                     {"additionalProperties", false}});
  }
  if (calls.empty()) return nullptr;
  auto s = convert("tools", "tool schema", [&] {
    std::vector<xgrammar::Grammar> parts;
    if (!prefix.empty()) parts.push_back(xgrammar::Grammar::FromEBNF("root ::= " + ebnf_literal(prefix)));
    OJson doc = {{"anyOf", calls}};
    if (!defs.empty()) doc["$defs"] = defs;
    parts.push_back(schema_of(doc));
    if (!suffix.empty()) parts.push_back(xgrammar::Grammar::FromEBNF("root ::= " + ebnf_literal(suffix)));
    return parts.size() == 1 ? parts[0] : xgrammar::Grammar::Concat(parts);
  });
  auto m = std::make_shared<GrammarSpec>(*s);
  m->markers = prefix + suffix;
  return m;
}

}  // namespace nvfp4::server

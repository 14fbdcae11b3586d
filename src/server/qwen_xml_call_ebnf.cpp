// See qwen_xml_call_ebnf.h.
#include "server/qwen_xml_call_ebnf.h"

#include <functional>
#include <vector>

#include "server/ebnf_literal.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

constexpr const char* kValueEbnf = R"(
integer ::= "-"? [0-9]{1,18}
number ::= "-"? [0-9]{1,18} ( "." [0-9]{1,18} )? ( [eE] [+\-]? [0-9]{1,2} )?
boolean ::= "true" | "false" | "True" | "False"
jv ::= jobj | jarr | jstr | jnum | "true" | "false" | "null"
jobj ::= "{" jws ( jstr jws ":" jws jv jws ( "," jws jstr jws ":" jws jv jws )* )? "}"
jarr ::= "[" jws ( jv jws ( "," jws jv jws )* )? "]"
jstr ::= "\"" ( [^"\\\n] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] ) )* "\""
jnum ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+\-]? [0-9]+ )?
jws ::= [ ]?
)";
constexpr const char* kAnyParamEbnf = R"(
pname ::= [^<>\n=]+
anyparam ::= "<parameter=" pname ">\n" text "\n</parameter>\n"
)";

}  // namespace

// The value rule for a property's schema, as the parser converts it: integers and numbers in the
// range the parser converts (ebnf_literal.h), strings of a bounded length as the schema bounds them.
std::string xml_value_rule(const OJson& schema, std::vector<std::string>& extra, const std::string& prefix) {
  if (!schema.is_object()) return "text";
  if (const auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty()) {
    std::string alts;
    for (const OJson& v : *e) {
      const std::string t = v.is_string() ? v.get<std::string>() : v.dump();
      if (t.find('<') != std::string::npos || t.find('\n') != std::string::npos) return "text";
      alts += (alts.empty() ? "" : " | ") + ebnf_literal(t);
    }
    const std::string name = prefix + "e" + std::to_string(extra.size());
    extra.push_back(name + " ::= " + alts);
    return name;
  }
  std::string type;
  if (const auto t = schema.find("type"); t != schema.end()) {
    if (t->is_string()) type = t->get<std::string>();
    else if (t->is_array())  // ["integer", "null"]: the first that is not null, as the parser reads it
      for (const OJson& x : *t)
        if (x.is_string() && x.get<std::string>() != "null") {
          type = x.get<std::string>();
          break;
        }
  }
  if (type == "integer") return "integer";
  if (type == "number") return "number";
  if (type == "boolean") return "boolean";
  if (type == "object" || type == "array") return "jv";
  if (type == "string" || type.empty()) {
    // minLength / maxLength: that many characters, none of them '<' (which begins both end markers).
    const std::string chars = ebnf_bounded_chars(schema);
    if (!chars.empty()) {
      const std::string name = prefix + "s" + std::to_string(extra.size());
      extra.push_back(name + " ::= " + chars);
      return name;
    }
  }
  return "text";
}

const char* xml_value_ebnf() { return kValueEbnf; }

std::string xml_call_alternatives(const OJson& tools, const std::string& only, std::vector<std::string>& extra,
                                  const std::function<std::string(const std::string&)>& head,
                                  const std::function<std::string(const std::string&, const std::string&, const OJson&)>& param) {
  std::string calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    const OJson& fn = tools[i]["function"];
    const std::string& name = fn["name"].get_ref<const std::string&>();
    if (!only.empty() && name != only) continue;
    const std::string prefix = std::string("t").append(std::to_string(i)).append("_");  // ("t" + to_string: GCC 12's false -Wrestrict)
    std::string params = "anyparam*";
    const auto p = fn.find("parameters");
    if (p != fn.end() && p->is_object() && p->contains("properties") && (*p)["properties"].is_object()) {
      const OJson& props = (*p)["properties"];
      const OJson* req = p->contains("required") ? &(*p)["required"] : nullptr;
      params.clear();
      for (auto it = props.begin(); it != props.end(); ++it) {
        bool required = false;
        if (req && req->is_array())
          for (const OJson& x : *req) required = required || (x.is_string() && x.get<std::string>() == it.key());
        const std::string one = param(it.key(), xml_value_rule(it.value(), extra, prefix), it.value());
        params += (params.empty() ? "" : " ") + (required ? one : "( " + one + " )?");
      }
      if (params.empty()) params = "\"\"";
    }
    calls += (calls.empty() ? "" : " | ") + head(name) + " " + params;
  }
  return calls;
}

std::string qwen_xml_call_ebnf(const OJson& tools, const std::string& only) {
  std::vector<std::string> extra;
  const std::string calls = xml_call_alternatives(
      tools, only, extra, [](const std::string& name) { return ebnf_literal(name + ">\n"); },
      [](const std::string& key, const std::string& value, const OJson&) {
        return ebnf_literal("<parameter=" + key + ">\n") + " " + value + " " + ebnf_literal("\n</parameter>\n");
      });
  if (calls.empty()) return "";
  std::string out = "root ::= \"<tool_call>\\n<function=\" ( " + calls + " ) \"</function>\\n</tool_call>\"\n";
  for (const std::string& e : extra) out += e + "\n";
  // Text ends where the parser ends a value: at "</parameter>" or at the next "<parameter=".
  return out + ebnf_text_without("text", {"</parameter>", "<parameter="}) + kValueEbnf + kAnyParamEbnf;
}

}  // namespace nvfp4::server

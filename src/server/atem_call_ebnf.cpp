// See atem_call_ebnf.h.
#include "server/atem_call_ebnf.h"

#include <vector>

#include "server/ebnf_literal.h"
#include "server/qwen_xml_call_ebnf.h"

namespace nvfp4::server {

std::string atem_call_ebnf(const nlohmann::ordered_json& tools, const std::string& only) {
  using OJson = nlohmann::ordered_json;
  std::vector<std::string> extra;
  const std::string calls = xml_call_alternatives(
      tools, only, extra,
      [](const std::string& name) {
        return ebnf_literal(name + "<|message|><atem:function_calls>\n<atem:invoke name=\"" + name + "\">\n");
      },
      [](const std::string& key, const std::string& rule, const OJson& schema) {
        // The template writes None as null (the parser reads null for any type): a type that
        // admits null takes it.
        std::string value = rule;
        if (const auto t = schema.find("type"); schema.is_object() && t != schema.end() && t->is_array())
          for (const OJson& x : *t)
            if (x.is_string() && x.get<std::string>() == "null" && rule != "text" && rule != "jv") value = "( " + rule + " | \"null\" )";
        return ebnf_literal("<atem:parameter name=\"" + key + "\">") + " " + value + " " + ebnf_literal("</atem:parameter>\n");
      });
  if (calls.empty()) return "";
  std::string out =
      "root ::= reasoning? \" to=\" ( " + calls + " ) " + ebnf_literal("</atem:invoke>\n</atem:function_calls>") + "\n" +
      "reasoning ::= " + ebnf_literal(" to=self<|message|>") + " rtext " + ebnf_literal("<|eom|><|start|>assistant") + "\n" +
      "apname ::= [^\"<>\\n]+\n" + "anyparam ::= \"<atem:parameter name=\\\"\" apname \"\\\">\" text " +
      ebnf_literal("</atem:parameter>\n") + "\n";
  for (const std::string& e : extra) out += e + "\n";
  return out + ebnf_text_without("text", {"</atem:parameter>"}) + ebnf_text_without("rtext", {"<|eom|>"}) + xml_value_ebnf();
}

}  // namespace nvfp4::server

// See atem_call_ebnf.h.
#include "server/atem_call_ebnf.h"

#include <vector>

#include "server/ebnf_literal.h"
#include "server/qwen_xml_call_ebnf.h"

namespace nvfp4::server {

std::string atem_call_ebnf(const nlohmann::ordered_json& tools, const std::string& only) {
  using OJson = nlohmann::ordered_json;
  std::string calls;
  std::vector<std::string> extra;
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
        // The template writes None as null (the parser reads null for any type): a type that
        // admits null takes it.
        std::string value = xml_value_rule(it.value(), extra, prefix);
        if (const auto t = it.value().find("type"); it.value().is_object() && t != it.value().end() && t->is_array())
          for (const OJson& x : *t)
            if (x.is_string() && x.get<std::string>() == "null" && value != "text" && value != "jv") value = "( " + value + " | \"null\" )";
        const std::string param = ebnf_literal("<atem:parameter name=\"" + it.key() + "\">") + " " + value + " " +
                                  ebnf_literal("</atem:parameter>\n");
        params += (params.empty() ? "" : " ") + (required ? param : "( " + param + " )?");
      }
      if (params.empty()) params = "\"\"";
    }
    calls += (calls.empty() ? "" : " | ") +
             ebnf_literal(name + "<|message|><atem:function_calls>\n<atem:invoke name=\"" + name + "\">\n") + " " + params;
  }
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

// The EBNF of a Muse Glimmer reply that is one tool call, as its template writes an assistant turn
//   [ to=self<|message|>REASONING<|eom|><|start|>assistant] to=NAME<|message|><atem:function_calls>\n
//   <atem:invoke name="NAME">\n<atem:parameter name="KEY">VALUE</atem:parameter>\n...</atem:invoke>\n
//   </atem:function_calls>
// (the generation prompt ends with <|start|>assistant; chat_channels.cpp and atem_calls read it
// back), for tool_choice "required" or a named tool.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace nvfp4::server {

// The grammar (root rule "root") of such a reply calling a tool of `tools`, or `only` when it is not
// empty; empty when no tool is left. Parameters as qwen_xml_call_ebnf takes them (the schema's
// properties in its order, the required ones present; each value as the parser converts it, null
// too where the type admits it), a value's text never holding "</atem:parameter>", the reasoning
// never "<|eom|>".
std::string atem_call_ebnf(const nlohmann::ordered_json& tools, const std::string& only);

}  // namespace nvfp4::server

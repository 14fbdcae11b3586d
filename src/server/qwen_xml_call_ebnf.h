// The EBNF of a Qwen3.5 / Qwen3.6 / Qwen3-Coder tool call as their templates write it
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// (tool_calls_xml.cpp reads it back), for tool_choice "required" or a named tool.
#pragma once
#include <nlohmann/json.hpp>
#include <functional>
#include <string>
#include <vector>

namespace nvfp4::server {

// The grammar (root rule "root") of one call of a tool of `tools` (OpenAI's tools array), or of
// `only` when it is not empty; empty when no tool is left. A tool's parameters are its schema's
// properties in the order the schema lists them, the required ones present, no others; each value
// as the parser converts it (vLLM's qwen3_coder): an integer, a number, true/false (or Python's
// True/False, as the template prints them), an enum's values, JSON for an object or array, and
// text for a string or anything else. Text may hold any character but never "</parameter>" or
// "<parameter=", where the parser would end the value. A tool without listed properties takes any
// parameters.
std::string qwen_xml_call_ebnf(const nlohmann::ordered_json& tools, const std::string& only);

// Shared with atem_call_ebnf.cpp (Muse Glimmer's calls take the same value conversion): the value
// rule for a property's schema (a rule name: integer, number, boolean, jv, text, or a rule it adds
// to `extra` named from `prefix`), and the EBNF of those rules but `text`, which each format
// defines as the text its parser ends a value at.
std::string xml_value_rule(const nlohmann::ordered_json& schema, std::vector<std::string>& extra, const std::string& prefix);
const char* xml_value_ebnf();
// The calls of `tools` (or of `only`) as EBNF alternatives: each tool's head(name), then its
// parameters as param(key, value rule, property schema) in the schema's order, the optional ones
// in "( ... )?", or "anyparam*" (a rule the format defines) for a tool without listed properties.
std::string xml_call_alternatives(
    const nlohmann::ordered_json& tools, const std::string& only, std::vector<std::string>& extra,
    const std::function<std::string(const std::string&)>& head,
    const std::function<std::string(const std::string&, const std::string&, const nlohmann::ordered_json&)>& param);

}  // namespace nvfp4::server

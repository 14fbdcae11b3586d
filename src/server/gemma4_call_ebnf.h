// The EBNF of a Gemma 4 tool call (`<|tool_call>call:NAME{key:value,...}<tool_call|>`, the
// template's own argument syntax: strings between <|"|> markers, bare keys, JSON numbers and
// literals; tool_calls_gemma4.cpp reads it back), for tool_choice "required" or a named tool.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace nvfp4::server {

// The grammar (root rule "root") of one call of a tool of `tools` (OpenAI's tools array), or of
// `only` when it is not empty; empty when no tool is left. Each tool's arguments follow its
// `parameters` where the schema says their shape: an object's properties in the order Gemma's
// template writes them (jinja's dictsort: by key, case-insensitively), the required ones present,
// no others when it lists properties; each value by its type (string, integer, number, boolean,
// null, array of items, nested object), enum or const, or anyOf / a list of types as
// alternatives. Anything else (no parameters, $ref, a schema without a type) takes any value in
// the syntax. Strings hold no '<', so that a string cannot run into a marker; null is "null" or
// "None" (the template writes None, Python's spelling).
std::string gemma4_call_ebnf(const nlohmann::ordered_json& tools, const std::string& only);

}  // namespace nvfp4::server

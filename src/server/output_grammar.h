// What a request constrains its output to (json_checker.h): response_format of chat and
// completions ({"type": "text"}, {"type": "json_object"}, or {"type": "json_schema", "json_schema":
// {"name", "schema", "strict", "description"}} as OpenAI defines them), the Responses API's
// text.format (the same with the json_schema fields beside "type"), and a tool call that
// tool_choice "required" or a named function asks for, in the chat template's own format.
// Throws ApiError(400) naming the field.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/json_schema.h"
#include "server/tool_calls.h"

namespace nvfp4::server {

// `field` is the object's name in errors ("response_format", "text.format"); `flat`: the
// Responses shape (name and schema beside type). Null for {"type": "text"}.
std::shared_ptr<const Grammar> response_format_grammar(const nlohmann::ordered_json& rf, const std::string& field,
                                                       bool flat);

// A request body's response_format (null when absent or text).
std::shared_ptr<const Grammar> body_response_format(const std::string& body);

// One call of a tool in `tools_json` (a validated tools array), of the one named `only` when not
// empty, written as format `f` writes a call: Hermes <tool_call>\n{"name", "arguments"}\n</tool_call>,
// Llama 3 {"name", "parameters"}, Mistral [TOOL_CALLS][{"name", "arguments"}]. Null for the
// formats whose calls are not JSON (QwenXml) or when the template shows none: such requests stay
// unconstrained. The tools' parameters schemas are compiled (400 naming tools[i].function.parameters...).
std::shared_ptr<const Grammar> tool_call_grammar(ToolFormat f, const std::string& tools_json, const std::string& only);

}  // namespace nvfp4::server

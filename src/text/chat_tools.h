// The JSON a chat request carries beyond role and text (tools, tool calls, template kwargs) as
// the Jinja values transformers' renderer would see: JSON objects become dicts in their key order
// (json.loads keeps it), arrays lists, numbers int or float, as Python's json module gives them.
#pragma once
#include <string>

#include "nvfp4/chat.h"
#include "text/jinja.h"

namespace nvfp4::chat_json {

// Parses JSON text into a template value; throws nvfp4::Error naming `source` and `what` for
// malformed JSON, nesting deeper than 64 levels or an integer Python would hold but int64 cannot.
jinja::Value parse(const std::string& text, const std::string& source, const std::string& what);

// The message dict a template sees: role, content, then tool_calls, tool_call_id, name,
// reasoning_content where set. `args_as_text`: tool call arguments stay JSON text (for templates
// that concatenate them as strings, DeepSeek R1's); else an object's text becomes a dict.
jinja::Value message(const ChatMessage& m, bool args_as_text, const std::string& source);

// Whether a template concatenates tool call arguments as a string ("['arguments'] +").
bool template_wants_text_arguments(const std::string& template_text);

}  // namespace nvfp4::chat_json

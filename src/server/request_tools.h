// The parts of a chat request that coding agents send beyond role and text: assistant turns with
// tool_calls, tool results, tools, tool_choice, reasoning controls (enable_thinking,
// reasoning_effort) and chat_template_kwargs. Read from the body again with key order kept
// (templates print tools with tojson: the order is the client's). Throws ApiError(400) naming
// the field, as request.cpp.
#pragma once
#include <string>

#include "server/request.h"

namespace nvfp4::server {

// After parse_messages: fills r.messages[i]'s tool fields and r's tools, tool_choice and
// template_vars from `body` (a JSON object, already parsed once).
void parse_chat_tools(const std::string& body, GenRequest& r);

// OpenAI's rule for function names (letters, digits, '_' and '-', at most 64), with '.' and ':'
// that MCP tool names use; ApiError 400 naming `name` otherwise.
void check_function_name(const std::string& n, const std::string& name);

}  // namespace nvfp4::server

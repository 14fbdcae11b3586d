// POST /v1/messages (Anthropic's Messages API) read into a chat request: `system` (a string or
// text blocks) a system message; `messages` with content as a string or blocks: text, thinking
// (reasoning_content), tool_use (an assistant turn's tool_calls, `input` as the arguments) and
// tool_result (a `tool` message per result, before the turn's text); tools (name, description,
// input_schema) the chat route's function tools; tool_choice auto/any/tool/none; thinking
// {type: enabled/disabled} the template's enable_thinking. Throws ApiError 400 naming the field
// (messages[1].content[0].tool_use_id). No model is needed (the fuzz target runs it alone).
#pragma once
#include <string>

#include "server/request.h"

namespace nvfp4::server {

GenRequest parse_messages_request(const std::string& body);

}  // namespace nvfp4::server

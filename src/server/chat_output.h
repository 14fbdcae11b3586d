// A chat reply's reasoning and tool calls in OpenAI's response shapes: the whole message
// (content, reasoning_content, tool_calls) and stream chunk deltas (tool_calls[i] with its index,
// id, type and function {name, arguments}).
#pragma once
#include <nlohmann/json.hpp>

#include "server/openai_json.h"
#include "server/tool_calls.h"

namespace nvfp4::server {

// choices[0].message of a whole response: content (null when the reply is tool calls alone),
// reasoning_content when there is some, tool_calls when there are any.
nlohmann::json chat_message_json(const ChatDelta& whole);

// A stream chunk carrying `d` (its calls numbered from `first_index`); no finish reason.
nlohmann::json chat_delta_chunk(const ResponseIds& r, const ChatDelta& d, int first_index, bool first,
                                bool with_usage_null, const std::vector<int32_t>* tokens,
                                const nlohmann::json& logprobs);

// "tool_calls" when the reply made calls and stopped of itself; else the scheduler's reason.
std::string chat_finish_reason(const std::string& reason, int n_calls);

}  // namespace nvfp4::server

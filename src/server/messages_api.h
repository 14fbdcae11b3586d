// POST /v1/messages: Anthropic's Messages API on the chat machinery (chat_run.h). MessagesOutput
// turns a reply's parsed deltas into content blocks (thinking, text, tool_use with its id and
// input) and Anthropic's stream events (message_start, content_block_start/delta/stop,
// message_delta with stop_reason and usage, message_stop); the whole message is the same blocks.
// Usable without a model (the tests drive it with deltas). Errors: anthropic_error_json.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/chat_run.h"

namespace nvfp4::server {

// Anthropic's stop_reason: tool_use, max_tokens, stop_sequence or end_turn.
std::string anthropic_stop_reason(const RunEnd& e);

class MessagesOutput {
 public:
  // `id`: "msg_..."; `n_prompt`: input_tokens.
  MessagesOutput(std::string id, std::string model, int64_t n_prompt);
  nlohmann::json begin();                               // message_start
  std::vector<nlohmann::json> delta(const ChatDelta& d);
  std::vector<nlohmann::json> end(const RunEnd& e);     // content_block_stop, message_delta, message_stop
  nlohmann::json message() const { return message_; }  // the whole message (after end())

 private:
  void close(std::vector<nlohmann::json>& ev);
  nlohmann::json message_;
  enum class Open { None, Thinking, Text } open_ = Open::None;
};

// "event: TYPE\ndata: JSON\n\n" for each.
std::string anthropic_sse(const std::vector<nlohmann::json>& events);

// {"type": "error", "error": {"type": "invalid_request_error", "message": ...}} (the type by status).
nlohmann::json anthropic_error_json(const ApiError& e);

void handle_messages(const Backend& b, const httplib::Request& req, const std::string& body, httplib::Response& res,
                     uint64_t id, std::shared_ptr<void> guard);
// POST /v1/messages/count_tokens: {"input_tokens": N} for the body's prompt (max_tokens not needed).
void handle_count_tokens(const Backend& b, const std::string& body, httplib::Response& res);

}  // namespace nvfp4::server

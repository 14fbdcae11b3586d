// POST /v1/responses: the Responses API on the chat machinery (chat_run.h). ResponsesOutput turns
// a reply's parsed deltas into output items (reasoning, message with output_text, function_call
// with its call_id) and the streaming events in OpenAI's shape, numbered by sequence_number; the
// whole response is the same items. Usable without a model (the tests drive it with deltas).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/chat_run.h"
#include "server/response_store.h"
#include "server/responses_request.h"

namespace nvfp4::server {

class ResponsesOutput {
 public:
  // `head`: the response object's fields other than status, output and usage (id first).
  explicit ResponsesOutput(nlohmann::json head);
  std::vector<nlohmann::json> begin();  // response.created, response.in_progress
  std::vector<nlohmann::json> delta(const ChatDelta& d);
  // The open item closed, then response.completed (or response.incomplete at max_output_tokens).
  std::vector<nlohmann::json> end(const RunEnd& e);
  nlohmann::json response() const { return response_; }  // the whole response (after end())
  // The generation failed: an "error" event (its code, message and param), numbered in turn.
  nlohmann::json error_event(const ApiError& e);
  // The reply as one assistant turn (for the store).
  ChatMessage assistant_turn() const;

 private:
  nlohmann::json event(const char* type, nlohmann::json body);
  void close(std::vector<nlohmann::json>& ev);
  std::string item_id(const char* prefix);
  nlohmann::json response_;
  nlohmann::json output_ = nlohmann::json::array();
  std::string base_;   // the response id's tail, for item ids
  int64_t seq_ = 0;
  int n_items_ = 0;
  enum class Open { None, Reasoning, Message } open_ = Open::None;
  std::string text_;   // the open item's text so far
};

// "event: TYPE\ndata: JSON\n\n" for each.
std::string sse_events(const std::vector<nlohmann::json>& events);

void handle_responses(const Backend& b, ResponseStore& store, const httplib::Request& req, const std::string& body,
                      httplib::Response& res, uint64_t id, std::shared_ptr<void> guard);

}  // namespace nvfp4::server

// POST /v1/responses (OpenAI's Responses API) read into a chat request: `input` (a string, or
// message, reasoning, function_call and function_call_output items) becomes chat messages,
// `instructions` a system message before them, function tools in the Responses shape (name,
// description, parameters at the top) the chat route's tools, `reasoning.effort` the template's
// reasoning_effort (and enable_thinking false for "none"). Throws ApiError 400 naming the field in
// the Responses request (input[2].call_id, tools[0].name). No model is needed (the fuzz target
// runs it alone).
#pragma once
#include <string>
#include <vector>

#include "server/json_fields.h"
#include "server/request.h"

namespace nvfp4::server {

struct ResponsesRequest {
  GenRequest gen;                   // messages: the input only (responses_messages() adds the rest)
  std::string instructions;         // "" : none
  bool has_instructions = false;
  std::vector<ChatMessage> input;   // the input items as chat messages
  std::string previous_response_id;
  bool store = true;
  OJson tools = OJson::array();     // as given, echoed in the response
  OJson tool_choice = "auto";       // as given
  OJson reasoning = nullptr;        // as given
  std::optional<int64_t> max_output_tokens;
};

ResponsesRequest parse_responses_request(const std::string& body);

// Input items -> chat messages: consecutive reasoning, assistant message and function_call items
// make one assistant turn (reasoning_content, content, tool_calls); a function_call_output is a
// `tool` message (named after its call when the call is among `earlier` or the items).
std::vector<ChatMessage> input_items(const OJson& items, const std::string& name,
                                     const std::vector<ChatMessage>& earlier = {});

// What the template renders: instructions (a system message), the stored conversation of the
// previous response, then the input.
std::vector<ChatMessage> responses_messages(const ResponsesRequest& r, const std::vector<ChatMessage>& history);

}  // namespace nvfp4::server

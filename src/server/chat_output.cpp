// OpenAI's shapes of a parsed chat reply (see chat_output.h).
#include "server/chat_output.h"

namespace nvfp4::server {

using nlohmann::json;

namespace {
json call_json(const ParsedToolCall& c) {
  return {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}
}  // namespace

json chat_message_json(const ChatDelta& w) {
  json m = {{"role", "assistant"}};
  m["content"] = w.content.empty() && !w.calls.empty() ? json(nullptr) : json(w.content);
  if (!w.reasoning.empty()) m["reasoning_content"] = w.reasoning;
  if (!w.calls.empty()) {
    json calls = json::array();
    for (const auto& c : w.calls) calls.push_back(call_json(c));
    m["tool_calls"] = std::move(calls);
  }
  return m;
}

json chat_delta_chunk(const ResponseIds& r, const ChatDelta& d, int first_index, bool first, bool with_usage_null,
                      const std::vector<int32_t>* tokens, const json& logprobs) {
  json j = chunk_json(r, d.content, nullptr, first, with_usage_null, tokens, logprobs);
  json& delta = j["choices"][0]["delta"];
  if (d.content.empty() && (!d.reasoning.empty() || !d.calls.empty())) delta.erase("content");
  if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
  if (!d.calls.empty()) {
    json calls = json::array();
    for (size_t i = 0; i < d.calls.size(); ++i) {
      json c = call_json(d.calls[i]);
      c["index"] = first_index + static_cast<int>(i);
      calls.push_back(std::move(c));
    }
    delta["tool_calls"] = std::move(calls);
  }
  return j;
}

std::string chat_finish_reason(const std::string& reason, int n_calls) {
  return n_calls > 0 && reason == "stop" ? "tool_calls" : reason;
}

}  // namespace nvfp4::server

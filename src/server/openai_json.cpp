#include "server/openai_json.h"

namespace nvfp4::server {

using nlohmann::json;

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

static json head(const ResponseIds& r, bool chunk) {
  return {{"id", r.id},
          {"object", r.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", r.created},
          {"model", r.model},
          {"system_fingerprint", "nvfp4"}};
}

json completion_json(const ResponseIds& r, const std::string& text, const std::string& finish_reason,
                     const Usage& usage, const std::vector<int32_t>* tokens, const json& logprobs) {
  json j = head(r, false);
  json c = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  if (r.chat) c["message"] = {{"role", "assistant"}, {"content", text}};
  else c["text"] = text;
  if (tokens) c["tokens"] = *tokens;
  j["choices"] = json::array({c});
  j["usage"] = usage_json(usage);
  return j;
}

json chunk_json(const ResponseIds& r, const std::string& text, const std::string* finish_reason, bool first,
                bool with_usage_null, const std::vector<int32_t>* tokens, const json& logprobs) {
  json j = head(r, true);
  json c = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", nullptr}};
  if (finish_reason) c["finish_reason"] = *finish_reason;
  if (r.chat) {
    json d = json::object();
    if (first) d["role"] = "assistant";
    if (!finish_reason || !text.empty()) d["content"] = text;
    c["delta"] = d;
  } else {
    c["text"] = text;
  }
  if (tokens) c["tokens"] = *tokens;
  j["choices"] = json::array({c});
  if (with_usage_null) j["usage"] = nullptr;
  return j;
}

json usage_chunk_json(const ResponseIds& r, const Usage& usage) {
  json j = head(r, true);
  j["choices"] = json::array();
  j["usage"] = usage_json(usage);
  return j;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

}  // namespace nvfp4::server

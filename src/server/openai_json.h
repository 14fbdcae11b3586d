// The response bodies of /v1/completions and /v1/chat/completions, whole and as stream chunks.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nvfp4::server {

struct ResponseIds {
  bool chat = false;
  std::string id;     // "chatcmpl-..." / "cmpl-..."
  std::string model;
  int64_t created = 0;
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, reused from the prompt cache
};

// {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details: {cached_tokens}}.
nlohmann::json usage_json(const Usage& u);
// A whole response; `logprobs` is the choice's (null when not asked for).
nlohmann::json completion_json(const ResponseIds& r, const std::string& text, const std::string& finish_reason,
                               const Usage& usage, const std::vector<int32_t>* tokens, const nlohmann::json& logprobs);
// A stream chunk: text (and the role, for the first chat chunk), or the finish reason.
nlohmann::json chunk_json(const ResponseIds& r, const std::string& text, const std::string* finish_reason,
                          bool first, bool with_usage_null, const std::vector<int32_t>* tokens,
                          const nlohmann::json& logprobs);
// The last chunk with stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk_json(const ResponseIds& r, const Usage& usage);
// "data: <json>\n\n" (invalid UTF-8 replaced, never thrown on).
std::string sse(const nlohmann::json& j);
std::string dump(const nlohmann::json& j);

}  // namespace nvfp4::server

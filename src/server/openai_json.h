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

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);
// A whole response.
nlohmann::json completion_json(const ResponseIds& r, const std::string& text, const std::string& finish_reason,
                               int64_t prompt_tokens, int64_t completion_tokens, const std::vector<int32_t>* tokens);
// A stream chunk: text (and the role, for the first chat chunk), or the finish reason.
nlohmann::json chunk_json(const ResponseIds& r, const std::string& text, const std::string* finish_reason,
                          bool first, bool with_usage_null, const std::vector<int32_t>* tokens);
// The last chunk with stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk_json(const ResponseIds& r, int64_t prompt_tokens, int64_t completion_tokens);
// "data: <json>\n\n" (invalid UTF-8 replaced, never thrown on).
std::string sse(const nlohmann::json& j);
std::string dump(const nlohmann::json& j);

}  // namespace nvfp4::server

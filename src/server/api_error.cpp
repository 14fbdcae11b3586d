#include "server/api_error.h"

namespace nvfp4::server {

std::string message_text(const ApiError& e) {
  // A message can quote request bytes cut mid-character (xgrammar's parse errors do); the reply
  // carries them as U+FFFD so that it is valid JSON.
  const std::string quoted = nlohmann::json(e.what()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

nlohmann::json error_json(const ApiError& e) {
  nlohmann::json err = {{"message", message_text(e)}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return {{"error", err}};
}

nlohmann::json error_json(int status, const std::string& message) { return error_json(ApiError(status, message)); }

}  // namespace nvfp4::server

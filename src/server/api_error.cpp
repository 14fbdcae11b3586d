#include "server/api_error.h"

namespace nvfp4::server {

nlohmann::json error_json(const ApiError& e) {
  nlohmann::json err = {{"message", e.what()}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return {{"error", err}};
}

nlohmann::json error_json(int status, const std::string& message) { return error_json(ApiError(status, message)); }

}  // namespace nvfp4::server

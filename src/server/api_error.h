// Errors of the HTTP API in OpenAI's shape: {"error": {"message", "type", "param", "code"}} with
// the HTTP status that goes with them. Thrown by request parsing and the scheduler; the routes
// turn them into responses.
#pragma once
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace nvfp4::server {

struct ApiError : std::runtime_error {
  int status;
  std::string type, param, code;
  ApiError(int status_, std::string message, std::string param_ = "", std::string code_ = "")
      : std::runtime_error(std::move(message)), status(status_), param(std::move(param_)), code(std::move(code_)) {
    type = status == 401   ? "authentication_error"
           : status == 404 ? "not_found_error"
           : status == 429 ? "rate_limit_error"
           : status == 503 ? "unavailable_error"
           : status >= 500 ? "server_error"
                           : "invalid_request_error";
  }
};

// The message as valid UTF-8 (invalid bytes become U+FFFD).
std::string message_text(const ApiError& e);

// The body of an error response (param and code are null when empty, as OpenAI sends them).
nlohmann::json error_json(const ApiError& e);
nlohmann::json error_json(int status, const std::string& message);

}  // namespace nvfp4::server

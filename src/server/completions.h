// POST /v1/completions and /v1/chat/completions: validate, tokenize, queue, answer whole or as
// server-sent events.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "server/http_server.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace nvfp4::server {

// Throws ApiError for what the client must fix (or 429/503). `guard` is held until the response
// has been sent (a stream's last event written or the client gone).
void handle_generation(const Backend& b, const httplib::Request& req, const std::string& body, httplib::Response& res,
                       bool chat, uint64_t id, std::shared_ptr<void> guard);

}  // namespace nvfp4::server

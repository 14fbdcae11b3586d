// How a request's body is framed, checked from its head before any byte of the body is read
// (RFC 9112 section 6). cpp-httplib 0.11 reads a chunked body or one without length whole, and
// takes the first of two Content-Length headers: the server decides here, and reads the body itself.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace nvfp4::server {

struct Framing {
  bool has_body = false;  // Content-Length > 0 or Transfer-Encoding: chunked
  bool chunked = false;
  size_t length = 0;      // Content-Length, when not chunked
};

// The framing of a request with these headers (names case-insensitive). Throws ApiError:
//   400 a Content-Length that is not one decimal number, two that differ, or one beside
//       Transfer-Encoding;
//   501 a Transfer-Encoding other than chunked (gzip, "gzip, chunked", identity ...);
//   405 a body on a method other than POST (the server reads no other method's body);
//   413 a Content-Length over max_body.
// A request with neither header has no body (it is not read until the client closes).
Framing check_framing(const std::string& method, const std::vector<std::pair<std::string, std::string>>& headers,
                      size_t max_body);

// Whether the JSON text nests arrays and objects deeper than max_depth (strings skipped; the
// text need not be valid). Checked before parsing, so that a body of brackets costs no memory.
bool json_too_deep(const std::string& text, int max_depth);
constexpr int kMaxJsonDepth = 64;

}  // namespace nvfp4::server

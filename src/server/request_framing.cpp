#include "server/request_framing.h"

#include <algorithm>
#include <cctype>

#include "server/api_error.h"

namespace nvfp4::server {
namespace {

bool same_name(const std::string& a, const char* b) {
  size_t i = 0;
  for (; i < a.size() && b[i]; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return i == a.size() && !b[i];
}

std::string trim_lower(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  std::string out = s.substr(a, b - a);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string shown(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 40)) out += (c >= 0x20 && c < 0x7f && c != '"') ? static_cast<char>(c) : '?';
  return out;
}

}  // namespace

Framing check_framing(const std::string& method, const std::vector<std::pair<std::string, std::string>>& headers,
                      size_t max_body) {
  Framing f;
  std::vector<std::string> lengths, codings;
  for (const auto& [name, value] : headers) {
    if (same_name(name, "Content-Length")) lengths.push_back(trim_lower(value));
    else if (same_name(name, "Transfer-Encoding")) codings.push_back(trim_lower(value));
  }
  if (!codings.empty()) {
    if (codings.size() != 1 || codings[0] != "chunked")
      throw ApiError(501, "Transfer-Encoding \"" + shown(codings[0]) + (codings.size() > 1 ? "\" (and more)" : "\"") +
                              " is not supported: send the body as is or chunked (Transfer-Encoding: chunked)",
                     "", "unsupported_transfer_encoding");
    if (!lengths.empty())
      throw ApiError(400, "a request has Content-Length or Transfer-Encoding, not both", "", "invalid_framing");
    f.chunked = f.has_body = true;
  } else if (!lengths.empty()) {
    for (const std::string& l : lengths) {
      if (l.empty() || l.size() > 19 || !std::all_of(l.begin(), l.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw ApiError(400, "Content-Length must be a decimal number of bytes, found \"" + shown(l) + "\"", "",
                       "invalid_framing");
      if (l != lengths[0])
        throw ApiError(400, "two Content-Length headers differ (\"" + shown(lengths[0]) + "\", \"" + shown(l) + "\")",
                       "", "invalid_framing");
    }
    f.length = static_cast<size_t>(std::stoull(lengths[0]));
    f.has_body = f.length > 0;
  }
  if (f.has_body && method != "POST")
    throw ApiError(405, "a " + shown(method) + " request has no body here (only POST routes take one)", "",
                   "method_not_allowed");
  if (!f.chunked && f.length > max_body)
    throw ApiError(413, "the request body exceeds " + std::to_string(max_body) + " bytes (Content-Length " +
                            std::to_string(f.length) + ")", "", "payload_too_large");
  return f;
}

bool json_too_deep(const std::string& text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace nvfp4::server

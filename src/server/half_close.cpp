#include "server/half_close.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cstdio>

#include "server/peer.h"

namespace nvfp4::server {
namespace {

bool send_all(int fd, const char* d, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, d, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    d += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

}  // namespace

bool answer_half_closed(const httplib::Request& req, httplib::Response& res) {
  PeerWatch peer(req);
  if (!peer.eof() || peer.gone()) return false;
  const int fd = peer.fd();
  const int status = res.status < 0 ? 200 : res.status;
  const bool chunked = res.content_provider_ && res.is_chunked_content_provider_;
  if (res.content_provider_ && !chunked) return false;  // a sized provider (a refusal that closes): httplib's way
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\n";
  for (const auto& [k, v] : res.headers)
    if (k != "Content-Length" && k != "Connection" && k != "Transfer-Encoding") head += k + ": " + v + "\r\n";
  head += chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  head += "Connection: close\r\n\r\n";
  bool ok = send_all(fd, head.data(), head.size());
  if (!chunked) {
    ok = ok && send_all(fd, res.body.data(), res.body.size());
  } else {
    httplib::DataSink sink;
    bool finished = false;
    sink.write = [&](const char* d, size_t n) {
      if (n == 0) return true;
      char size[32];
      const int m = std::snprintf(size, sizeof size, "%zx\r\n", n);
      return ok = ok && send_all(fd, size, static_cast<size_t>(m)) && send_all(fd, d, n) && send_all(fd, "\r\n", 2);
    };
    sink.done = [&] {
      finished = true;
      ok = ok && send_all(fd, "0\r\n\r\n", 5);
    };
    sink.is_writable = [&] { return ok; };
    size_t offset = 0;
    while (ok && !finished && res.content_provider_(offset, 0, sink)) {
    }
    if (res.content_provider_resource_releaser_) res.content_provider_resource_releaser_(ok && finished);
    res.content_provider_resource_releaser_ = nullptr;
    res.content_provider_ = nullptr;
    res.is_chunked_content_provider_ = false;
  }
  ::shutdown(fd, SHUT_WR);
  return true;
}

}  // namespace nvfp4::server

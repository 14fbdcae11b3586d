#include "server/half_close.h"

#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>

#include "server/peer.h"

namespace nvfp4::server {
namespace {

// All of d, each part within the server's write timeout (a client that stops reading does not hold
// the thread).
bool send_all(int fd, const char* d, size_t n) {
  constexpr int kWriteTimeoutMs = 30000;  // http_server.cpp's set_write_timeout(30)
  while (n > 0) {
    pollfd p{fd, POLLOUT, 0};
    const int r = ::poll(&p, 1, kWriteTimeoutMs);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    const ssize_t w = ::send(fd, d, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
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

// One chunk of a chunked body (nothing for an empty one: that would end the body).
bool send_chunk(int fd, const char* d, size_t n) {
  if (n == 0) return true;
  char size[32];
  const int m = std::snprintf(size, sizeof size, "%zx\r\n", n);
  return send_all(fd, size, static_cast<size_t>(m)) && send_all(fd, d, n) && send_all(fd, "\r\n", 2);
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
    sink.write = [&](const char* d, size_t n) { return ok = ok && send_chunk(fd, d, n); };
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

bool StreamOut::half_closed() const { return peer_.found() && peer_.eof() && !peer_.gone(); }

bool StreamOut::write(httplib::DataSink& sink, const std::string& s) {
  if (s.empty() || ended_) return true;
  if (!direct_ && half_closed()) direct_ = true;
  if (direct_) return send_chunk(peer_.fd(), s.data(), s.size());
  if (sink.write(s.data(), s.size())) return true;
  // The end of stream came between the look above and httplib's own: its write sent nothing (it
  // looks before each send; a piece this small goes in one) and it will not call the provider
  // again, so the rest is written here.
  if (!half_closed()) return false;
  direct_ = sink_lost_ = true;
  return send_chunk(peer_.fd(), s.data(), s.size());
}

void StreamOut::done(httplib::DataSink& sink) {
  if (ended_) return;
  ended_ = true;
  if (!direct_) return sink.done();
  if (send_all(peer_.fd(), "0\r\n\r\n", 5)) ::shutdown(peer_.fd(), SHUT_WR);
}

std::function<bool(size_t, httplib::DataSink&)> stream_provider(std::shared_ptr<StreamOut> out,
                                                                 std::function<bool(httplib::DataSink&)> step) {
  return [out = std::move(out), step = std::move(step)](size_t, httplib::DataSink& sink) {
    bool ok = step(sink);
    while (ok && out->sink_lost() && !out->ended()) ok = step(sink);
    // Written straight to the socket: once it has ended (or failed), httplib closes the connection
    // (its own write of the end would fail: the peer is at end of stream).
    if (out->direct() && (out->ended() || !ok)) return false;
    return ok;
  };
}

}  // namespace nvfp4::server

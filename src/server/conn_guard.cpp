#include "server/conn_guard.h"

#include <httplib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "server/api_error.h"
#include "server/peer.h"

namespace nvfp4::server {

using Clock = std::chrono::steady_clock;

void ConnGuard::start(int port) {
  std::lock_guard lk(mu_);
  if (th_.joinable()) return;
  port_ = port;
  quit_ = false;
  th_ = std::thread([this] { loop(); });
}

void ConnGuard::stop() {
  {
    std::lock_guard lk(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  if (th_.joinable()) th_.join();
}

void ConnGuard::set_phase(const httplib::Request& req, Phase p) {
  const std::string key = request_key(req);
  std::lock_guard lk(mu_);
  auto it = conns_.find(key);
  if (it == conns_.end()) it = conns_.emplace(key, Conn{}).first;  // fd learnt at the next scan
  it->second.phase = p;
  it->second.since = Clock::now();
}

void ConnGuard::head_done(const httplib::Request& req, bool has_body) {
  set_phase(req, has_body ? Phase::body : Phase::handler);
}
void ConnGuard::body_done(const httplib::Request& req) { set_phase(req, Phase::handler); }
void ConnGuard::response_done(const httplib::Request& req) { set_phase(req, Phase::head); }

void ConnGuard::drain() {
  {
    std::lock_guard lk(mu_);
    draining_ = true;
    drain_at_ = Clock::now();
  }
  scan();  // at once: the heads in progress end before the caller goes on
}

void ConnGuard::close_all() {
  {
    std::lock_guard lk(mu_);
    closing_ = true;
  }
  scan();
}

// A last response written by the guard (status 408 or 503, OpenAI's error shape), then both
// directions shut: the HTTP thread reading the socket wakes with end of stream and closes it.
void ConnGuard::end(int fd, int status) {
  if (status > 0) {
    const ApiError e = status == 408 ? ApiError(408, "the request was not received in time", "", "request_timeout")
                                     : ApiError(503, "the server is shutting down", "", "shutting_down");
    const std::string body = error_json(e).dump();
    const std::string msg = "HTTP/1.1 " + std::to_string(status) +
                            (status == 408 ? " Request Timeout" : " Service Unavailable") +
                            "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                            "\r\nConnection: close\r\n\r\n" + body;
    (void)::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::shutdown(fd, SHUT_RDWR);
}

// One look at the server's connections. The descriptors are the HTTP threads'; one is only shut
// down (never closed) here, right after its address pair was read from it, so a descriptor that
// httplib closed and reused meanwhile is at worst a connection of the same port ended early.
void ConnGuard::scan() {
  std::lock_guard lk(mu_);
  if (port_ < 0) return;
  const auto now = Clock::now();
  std::set<std::string> seen;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const int fd = proc_fd_socket(e.path().string());
    if (fd < 0) continue;
    const std::string key = socket_key(fd, port_);
    if (key.empty()) continue;
    seen.insert(key);
    auto it = conns_.find(key);
    if (it == conns_.end()) {
      it = conns_.emplace(key, Conn{fd, Phase::head, now, false}).first;
    } else if (it->second.fd != fd) {
      if (it->second.fd >= 0) it->second = Conn{fd, Phase::head, now, false};  // a new connection, same pair
      it->second.fd = fd;
    }
    Conn& c = it->second;
    if (c.ended) continue;
    int status = -1;  // -1: keep
    if (closing_) {
      status = c.phase == Phase::handler ? 0 : 503;
    } else if (c.phase == Phase::head) {
      auto limit = d_.head;
      auto from = c.since;
      if (draining_) {
        int pending = 0;
        // Waiting (kept alive) or mid-head when the drain began: ended now; bytes not yet read may
        // be a whole request sent just before: it gets the drain's short deadline to be answered 503.
        if (c.since < drain_at_ && (::ioctl(fd, FIONREAD, &pending) != 0 || pending == 0)) limit = limit.zero();
        from = std::max(from, drain_at_);
        limit = std::min(limit, kDrainHead);
      }
      if (now - from >= limit) status = draining_ ? 503 : 408;
    } else if (c.phase == Phase::body) {
      if (now - c.since >= d_.body) status = 408;
    }
    if (status < 0) continue;
    end(fd, status);
    c.ended = true;
  }
  for (auto it = conns_.begin(); it != conns_.end();) {
    // Gone from the process (closed): forgotten. A hook's entry not yet seen has fd -1: its
    // connection ended before a scan saw it when it still is not seen a second later.
    if (!seen.count(it->first) && (it->second.fd >= 0 || now - it->second.since > std::chrono::seconds(1)))
      it = conns_.erase(it);
    else ++it;
  }
}

void ConnGuard::loop() {
  std::unique_lock lk(mu_);
  while (!quit_) {
    cv_.wait_for(lk, kTick);
    if (quit_) break;
    lk.unlock();
    scan();
    lk.lock();
  }
}

}  // namespace nvfp4::server

#include "server/peer.h"

#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace nvfp4::server {
namespace {

// The numeric host and port of an address, as httplib writes them (getnameinfo, NI_NUMERICHOST).
bool host_port(const sockaddr_storage& a, socklen_t len, std::string& host, int& port) {
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(s);
  return true;
}

bool matches(int fd, const httplib::Request& req) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  std::string host;
  int port = -1;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || (a.ss_family != AF_INET && a.ss_family != AF_INET6))
    return false;
  if (!host_port(a, len, host, port) || port != req.local_port || host != req.local_addr) return false;
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return false;
  return host_port(a, len, host, port) && port == req.remote_port && host == req.remote_addr;
}

}  // namespace

PeerWatch::PeerWatch(const httplib::Request& req) {
  if (req.remote_port < 0 || req.local_port < 0) return;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = e.path().filename().string();
    char* end = nullptr;
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end == name.c_str() || *end != '\0' || fd < 0) continue;
    if (matches(static_cast<int>(fd), req)) {
      fd_ = static_cast<int>(fd);
      return;
    }
  }
}

bool PeerWatch::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  const int n = ::poll(&p, 1, 0);
  if (n <= 0) return false;  // nothing to read: connected (or poll failed: cannot tell)
  if (p.revents & (POLLERR | POLLNVAL)) return true;
  char c;
  const ssize_t r = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r > 0) return false;  // the next request of a kept-alive connection
  if (r == 0) return true;  // end of stream: the client closed
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace nvfp4::server

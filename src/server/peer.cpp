#include "server/peer.h"

#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

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

}  // namespace

std::string socket_key(int fd, int port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  std::string local, remote;
  int lport = -1, rport = -1;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || (a.ss_family != AF_INET && a.ss_family != AF_INET6))
    return "";
  if (!host_port(a, len, local, lport) || lport != port) return "";
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || !host_port(a, len, remote, rport)) return "";
  return remote + "|" + std::to_string(rport) + "|" + local;
}

std::string request_key(const httplib::Request& req) {
  return req.remote_addr + "|" + std::to_string(req.remote_port) + "|" + req.local_addr;
}

int proc_fd_socket(const std::string& entry_path) {
  const std::string name = entry_path.substr(entry_path.rfind('/') + 1);
  char* end = nullptr;
  const long fd = std::strtol(name.c_str(), &end, 10);
  if (name.empty() || end == name.c_str() || *end != '\0' || fd < 0 || fd > INT_MAX) return -1;
  char target[32];
  const ssize_t len = ::readlink(entry_path.c_str(), target, sizeof target);
  if (len < 7 || std::string_view(target, 7) != "socket:") return -1;
  return static_cast<int>(fd);
}

PeerWatch::PeerWatch(const httplib::Request& req) {
  if (req.remote_port < 0 || req.local_port < 0) return;
  const std::string want = request_key(req);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const int fd = proc_fd_socket(e.path().string());
    if (fd < 0) continue;
    if (socket_key(fd, req.local_port) == want) {
      fd_ = fd;
      return;
    }
  }
}

bool PeerWatch::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  const int n = ::poll(&p, 1, 0);
  if (n <= 0) return false;  // nothing to read: connected (or poll failed: cannot tell)
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return true;  // reset (both ways closed)
  char c;
  const ssize_t r = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r >= 0) return false;  // data (the next request of a kept-alive connection) or end of stream
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

bool PeerWatch::eof() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char c;
  return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

bool PeerWatch::probe(const std::string& bytes) {
  if (fd_ < 0 || probed_) return false;
  probed_ = true;
  return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(bytes.size());
}

}  // namespace nvfp4::server

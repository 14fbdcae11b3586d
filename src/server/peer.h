// Whether the client of a request is still connected. cpp-httplib 0.11 (Debian 12's) has no
// Request::is_connection_closed() (later versions peek the socket for it), so this finds the
// request's socket by its address pair (local and remote address and port, unique per TCP
// connection) among the process's descriptors and peeks it the same way: readable with nothing
// to read means the client closed. The socket stays open while its request is handled (httplib
// closes it on the same thread afterwards), so the descriptor cannot be reused meanwhile.
#pragma once
#include <string>

namespace httplib {
struct Request;
}

namespace nvfp4::server {

// "remote-address|remote-port|local-address" of a connected TCP socket whose local port is
// `port` (addresses as cpp-httplib writes them); empty for any other descriptor.
std::string socket_key(int fd, int port);
// The same key for the connection of a request.
std::string request_key(const httplib::Request& req);
// The descriptor N of a /proc/self/fd entry ("/proc/self/fd/N") when it is a socket, else -1, told
// by the link's target ("socket:[inode]"): readlink reads /proc, so the other descriptors (model
// files, the directory being listed) are never touched. (An fstat on each was also what made
// ThreadSanitizer's runtime fail a CHECK reporting a descriptor it had not seen opened:
// ServeSpec.RefusedInF32... under scripts/tsan.sh.)
int proc_fd_socket(const std::string& entry_path);

// A client that half-closes its side after sending its request (`nc -N`, shutdown(SHUT_WR)) is
// still there: end of stream alone is not "gone". It is told apart from one that closed its socket
// by writing to it (probe()): a closed socket answers with a reset, which gone() then sees.
class PeerWatch {
 public:
  explicit PeerWatch(const httplib::Request& req);
  // The connection was reset or has failed (or the client closed and a probe was answered by a
  // reset). False when the socket was not found.
  bool gone() const;
  // The client has sent end of stream: half-closed, or closed (a write tells which).
  bool eof() const;
  // Writes `bytes` (an interim response or an SSE comment) once, to tell the two apart; false when
  // already done or the write failed.
  bool probe(const std::string& bytes);
  bool probed() const { return probed_; }
  bool found() const { return fd_ >= 0; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  bool probed_ = false;
};

}  // namespace nvfp4::server

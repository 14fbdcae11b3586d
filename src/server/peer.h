// Whether the client of a request is still connected. cpp-httplib 0.11 (Debian 12's) has no
// Request::is_connection_closed() (later versions peek the socket for it), so this finds the
// request's socket by its address pair (local and remote address and port, unique per TCP
// connection) among the process's descriptors and peeks it the same way: readable with nothing
// to read means the client closed. The socket stays open while its request is handled (httplib
// closes it on the same thread afterwards), so the descriptor cannot be reused meanwhile.
#pragma once

namespace httplib {
struct Request;
}

namespace nvfp4::server {

class PeerWatch {
 public:
  explicit PeerWatch(const httplib::Request& req);
  // The client has closed its end (or reset the connection). False when the socket was not found.
  bool gone() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace nvfp4::server

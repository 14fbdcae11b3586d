// Answers to a client that half-closed its side after sending (`nc -N`, shutdown(SHUT_WR)).
// cpp-httplib 0.11 writes nothing to a socket that reads end of stream (its is_writable() peeks
// the socket and takes end of stream for a closed peer), so such a client got no answer. When the
// request's socket is at end of stream once the route has answered, the response is written here,
// straight to the socket (a stream's events as chunks, as httplib would), with Connection: close;
// httplib's own write then fails and it closes the connection.
#pragma once

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace nvfp4::server {

// True when the response was written here (the client had half-closed or closed).
bool answer_half_closed(const httplib::Request& req, httplib::Response& res);

}  // namespace nvfp4::server

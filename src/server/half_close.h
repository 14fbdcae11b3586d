// Answers to a client that half-closed its side after sending (`nc -N`, shutdown(SHUT_WR)).
// cpp-httplib 0.11 writes nothing to a socket that reads end of stream (its is_writable() peeks
// the socket and takes end of stream for a closed peer), so such a client got no answer, or a
// stream cut where its end of stream arrived. Two ways around it:
// - answer_half_closed(): when the request's socket is at end of stream once the route has
//   answered, the response is written here, straight to the socket (a stream's events as chunks,
//   as httplib would), with Connection: close; httplib's own write then fails and it closes the
//   connection.
// - StreamOut: a stream begun through httplib goes on straight to the socket from the moment the
//   client's end of stream is seen (it may come at any time while the events flow).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "server/peer.h"

namespace httplib {
struct Request;
struct Response;
class DataSink;
}  // namespace httplib

namespace nvfp4::server {

// True when the response was written here (the client had half-closed or closed).
bool answer_half_closed(const httplib::Request& req, httplib::Response& res);

// The body of a chunked response, written through httplib's sink until the client's end of stream
// is seen, then as chunks straight to the socket; the last chunk is then followed by our side's
// shutdown, and the provider returns false so that httplib closes the connection.
class StreamOut {
 public:
  explicit StreamOut(const httplib::Request& req) : peer_(req) {}
  PeerWatch& peer() { return peer_; }
  // One piece of the body (nothing for an empty one); false when it could not be written.
  bool write(httplib::DataSink& sink, const std::string& s);
  // The end of the body.
  void done(httplib::DataSink& sink);
  // Whether the body goes straight to the socket, and whether httplib's sink failed on the way
  // there (the provider must then write the rest in the same call: httplib stops calling it).
  bool direct() const { return direct_; }
  bool sink_lost() const { return sink_lost_; }
  bool ended() const { return ended_; }

 private:
  bool half_closed() const;
  PeerWatch peer_;
  bool direct_ = false, sink_lost_ = false, ended_ = false;
};

// A chunked content provider that calls `step` (one update of the stream, written through `out`)
// and carries the stream on past the client's end of stream.
std::function<bool(size_t, httplib::DataSink&)> stream_provider(std::shared_ptr<StreamOut> out,
                                                                 std::function<bool(httplib::DataSink&)> step);

}  // namespace nvfp4::server

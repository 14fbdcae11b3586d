// Deadlines for the connections of `nvfp4 serve`. cpp-httplib 0.11 (Debian 12's) has only a
// timeout per read, so a client sending a byte a second holds an HTTP thread for good. The guard
// is one thread that looks at the server's connected sockets every few milliseconds (found as
// PeerWatch finds them: by their address pair among the process's descriptors) and knows where
// each stands from the routes' hooks:
//   head     from the accept (or the end of the previous response on a kept-alive connection) to
//            the request's head parsed: at most `head` long;
//   body     from the head to the body read: at most `body` long;
//   handler  from the body read to the response sent: no deadline (a generation takes its time;
//            a client that leaves is noticed by PeerWatch).
// A connection past its deadline gets a 408 in OpenAI's error shape and is shut down (both ways),
// which wakes the HTTP thread blocked on it; that thread closes it as after any request.
// drain() ends the connections still reading a request head (a kept-alive one waiting included)
// and gives new ones a short head deadline; close_all() shuts every connection (the end of
// --shutdown-grace), so that the HTTP threads can be joined whatever clients do.
#pragma once
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace httplib {
struct Request;
}

namespace nvfp4::server {

struct Deadlines {
  std::chrono::milliseconds head{10000};
  std::chrono::milliseconds body{30000};
};

class ConnGuard {
 public:
  explicit ConnGuard(Deadlines d) : d_(d) {}
  ~ConnGuard() { stop(); }
  ConnGuard(const ConnGuard&) = delete;
  ConnGuard& operator=(const ConnGuard&) = delete;

  void start(int port);  // the port the server listens on; starts the thread
  void stop();

  // Hooks of the routes (any thread), keyed by the request's address pair.
  void head_done(const httplib::Request& req, bool has_body);  // body phase (handler phase when none)
  void body_done(const httplib::Request& req);                  // handler phase
  void response_done(const httplib::Request& req);              // head phase again (keep-alive)

  void drain();      // heads in progress end now (503); new heads get at most kDrainHead
  void close_all();  // every connection is shut down, now and until stop()

  static constexpr std::chrono::milliseconds kDrainHead{1000};
  static constexpr std::chrono::milliseconds kTick{20};

 private:
  enum class Phase { head, body, handler };
  struct Conn {
    int fd = -1;
    Phase phase = Phase::head;
    std::chrono::steady_clock::time_point since;
    bool ended = false;  // shut down by the guard
  };
  void loop();
  void scan();
  void set_phase(const httplib::Request& req, Phase p);
  static void end(int fd, int status);

  Deadlines d_;
  int port_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Conn> conns_;  // by "remote|port|local"
  bool quit_ = false, draining_ = false, closing_ = false;
  std::chrono::steady_clock::time_point drain_at_;
  std::thread th_;
};

}  // namespace nvfp4::server

// The HTTP side of `nvfp4 serve` (cpp-httplib): routes, API key, body limit, deadlines (ConnGuard),
// errors in OpenAI's shape. It listens before the model is loaded (every route answers 503 until
// set_backend()) and after drain(). /v1/messages answers errors in Anthropic's shape.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "nvfp4/chat.h"
#include "nvfp4/tokenizer.h"
#include "server/conn_guard.h"
#include "server/metrics.h"
#include "server/response_store.h"
#include "server/scheduler.h"

namespace httplib {
class Server;
}

namespace nvfp4::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;               // 0: any free port (bind() says which)
  std::string api_key;           // empty: none
  size_t max_body = size_t{8} << 20;  // every framing: Content-Length, chunked (more: 413)
  int http_threads = 8;                 // connections served at once (more wait, under the head deadline)
  Deadlines deadlines;                  // a request's head and body (more: 408)
  // /v1/responses' previous_response_id: past responses kept in memory, at most this many, each
  // for at most this long.
  size_t responses_stored = 1024;
  size_t responses_bytes_mib = 256;   // and at most this much text in all
  std::chrono::seconds responses_ttl{3600};
};

// What the routes need once the model is loaded.
struct Backend {
  std::string model_name;
  const Tokenizer* tok = nullptr;
  std::optional<ChatTemplate> chat;  // none: the checkpoint has no usable template
  std::string chat_error;            // why not
  ChatRenderOptions chat_opts;
  Scheduler* sched = nullptr;
  std::shared_ptr<OutputCompiler> grammars;  // constrained output: grammars compiled for tok
  int64_t n_ctx = 0;
  int64_t n_embd = 0;                // the hidden state's width (embeddings)
  int64_t created = 0;               // unix time of loading
  bool speculative = false;          // responses carry timings.draft_n, draft_n_accepted
};

class HttpServer {
 public:
  HttpServer(const ServerOptions& opt, Metrics& metrics);
  ~HttpServer();
  // Binds; returns the port. Throws nvfp4::Error when it cannot.
  int bind();
  void listen();  // serves until stop(); returns when every request in flight has ended
  void stop();    // returns once listen() has (call it from another thread than listen's)
  // Waits until no generation request is in flight (its response sent) or `timeout` has passed.
  void wait_idle(std::chrono::milliseconds timeout) const;
  // SIGTERM: every route answers 503 from now on; connections still reading a request head are
  // ended (503), new heads get ConnGuard::kDrainHead.
  void drain();
  // The end of the grace: every connection is shut down, so that stop() returns at once.
  void close_all();
  void set_backend(std::unique_ptr<Backend> b);  // ready: the routes serve

 private:
  void routes();
  ServerOptions opt_;
  Metrics& metrics_;
  std::unique_ptr<httplib::Server> svr_;
  std::unique_ptr<Backend> backend_;
  std::atomic<const Backend*> ready_{nullptr};
  std::atomic<uint64_t> next_id_{0};
  std::atomic<bool> listened_{false};
  std::atomic<bool> draining_{false};
  ConnGuard guard_;
  std::shared_ptr<std::atomic<int>> in_flight_ = std::make_shared<std::atomic<int>>(0);
  ResponseStore responses_;
};

}  // namespace nvfp4::server

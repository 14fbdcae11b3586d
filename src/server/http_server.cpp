#include "server/http_server.h"

#include <httplib.h>

#include <poll.h>
#include <strings.h>
#include <sys/socket.h>

#include <thread>

#include "nvfp4/error.h"
#include "server/api_error.h"
#include "server/completions.h"
#include "server/embeddings.h"
#include "server/half_close.h"
#include "server/messages_api.h"
#include "server/responses_api.h"
#include "server/openai_json.h"
#include "server/peer.h"
#include "server/request.h"
#include "server/request_framing.h"

namespace nvfp4::server {
namespace {

using httplib::Request;
using httplib::Response;
using HR = httplib::Server::HandlerResponse;

// Anthropic's routes answer errors in Anthropic's shape, the others in OpenAI's.
bool anthropic_route(const std::string& path) { return path.rfind("/v1/messages", 0) == 0; }

std::string error_body(const std::string& path, const ApiError& e) {
  return dump(anthropic_route(path) ? anthropic_error_json(e) : error_json(e));
}

void send_error(const Request& req, Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(error_body(req.path, e), "application/json");
}

// Equal strings, in time that does not depend on where they first differ.
bool same_key(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

// At most 80 printable ASCII characters of s, for messages.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  return out;
}

// After the response is written, what the client still sends is read and dropped for a moment
// (at most 250 ms and 4 MiB) with our side shut for writing, so that closing the socket with unread
// bytes (a reset) does not destroy the response before the client has read it.
void linger(const Request& req) {
  const PeerWatch p(req);
  if (!p.found()) return;
  ::shutdown(p.fd(), SHUT_WR);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
  size_t dropped = 0;
  char buf[16384];
  while (dropped < (size_t{4} << 20)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pf{p.fd(), POLLIN, 0};
    if (::poll(&pf, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::recv(p.fd(), buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    dropped += static_cast<size_t>(n);
  }
}

// An error response after which the connection is closed: the request's body (or what is left of
// it) is not read. cpp-httplib 0.11 ends a connection whose content provider fails, so the body is
// written by a provider that then says it failed.
void send_error_and_close(const Request& req, Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_header("Connection", "close");
  if (e.status == 405) res.set_header("Allow", "GET, HEAD, POST");
  auto body = std::make_shared<std::string>(error_body(req.path, e));
  const Request* rq = &req;  // alive while the response is written
  res.set_content_provider(body->size(), "application/json", [body, rq](size_t off, size_t len, httplib::DataSink& sink) {
    if (off < body->size()) sink.write(body->data() + off, std::min(len, body->size() - off));
    linger(*rq);
    return false;
  });
}

std::vector<std::pair<std::string, std::string>> header_list(const Request& req) {
  return {req.headers.begin(), req.headers.end()};
}

// `Authorization: Bearer KEY`, the scheme in any case (RFC 9110 11.1), then one or more spaces.
bool key_ok(const std::string& h, const std::string& key) {
  if (h.size() < 7 || strncasecmp(h.c_str(), "bearer ", 7) != 0) return false;
  size_t i = 7;
  while (i < h.size() && h[i] == ' ') ++i;
  return i < h.size() && same_key(h.substr(i), key);
}

// Reads the body of a request whose head passed check_framing(): at most `max` bytes, whatever the
// framing (the receiver refuses the byte past the limit, so no more is read). A request with
// neither Content-Length nor Transfer-Encoding has no body. Throws ApiError 413, or 400 when the
// framing is broken or the client stopped sending (408 when the guard's deadline ended it).
std::string read_body(const Request& req, const httplib::ContentReader& reader, size_t max) {
  std::string body;
  if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) return body;
  bool over = false;
  const bool ok = reader([&](const char* d, size_t n) {
    if (n > max - body.size()) {
      over = true;
      return false;
    }
    body.append(d, n);
    return true;
  });
  if (over)
    throw ApiError(413, "the request body exceeds " + std::to_string(max) + " bytes", "", "payload_too_large");
  if (!ok)
    throw ApiError(400, "the request body ended before its framing said (Content-Length or chunks)", "",
                   "invalid_framing");
  return body;
}

}  // namespace

HttpServer::HttpServer(const ServerOptions& opt, Metrics& metrics)
    : opt_(opt),
      metrics_(metrics),
      svr_(std::make_unique<httplib::Server>()),
      guard_(opt.deadlines),
      responses_(opt.responses_stored, opt.responses_ttl, opt.responses_bytes_mib << 20) {
  const int n = std::max(2, opt_.http_threads);
  svr_->new_task_queue = [n] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  svr_->set_payload_max_length(opt_.max_body);
  svr_->set_keep_alive_timeout(2);
  // The guard ends a slow head or body at its deadline; a single read waits past both.
  const auto longest = std::max(opt_.deadlines.head, opt_.deadlines.body) + std::chrono::seconds(1);
  svr_->set_read_timeout(std::chrono::duration_cast<std::chrono::seconds>(longest).count() + 1);
  svr_->set_write_timeout(30);
  // SO_REUSEADDR (a restart binds at once past TIME_WAIT), not httplib 0.11's default SO_REUSEPORT,
  // which let a second server bind the same port and take a share of the first one's connections.
  svr_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const int port = opt_.port == 0 ? svr_->bind_to_any_port(opt_.host)
                                  : (svr_->bind_to_port(opt_.host, opt_.port) ? opt_.port : -1);
  if (port < 0)
    throw Error(opt_.host + ":" + std::to_string(opt_.port), "", "cannot listen", "a free port on a local address",
                "bind failed");
  guard_.start(port);
  return port;
}

void HttpServer::listen() {
  svr_->listen_after_bind();
  listened_ = true;
}

// httplib's stop() does nothing before listen() has started: repeated until listen() returns.
void HttpServer::stop() {
  while (!listened_.load()) {
    svr_->stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  guard_.stop();
}

void HttpServer::drain() {
  draining_ = true;
  guard_.drain();
}

void HttpServer::close_all() { guard_.close_all(); }

void HttpServer::wait_idle(std::chrono::milliseconds timeout) const {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (in_flight_->load() > 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void HttpServer::set_backend(std::unique_ptr<Backend> b) {
  backend_ = std::move(b);
  ready_.store(backend_.get());
}

void HttpServer::routes() {
  httplib::Server& s = *svr_;
  s.set_pre_routing_handler([this](const Request& req, Response& res) {
    // The body's framing first: nothing of it is read before it is known to be acceptable.
    Framing f;
    try {
      f = check_framing(req.method, header_list(req), opt_.max_body);
      if (req.method != "GET" && req.method != "HEAD" && req.method != "POST")
        throw ApiError(405, "method " + printable(req.method) + " is not served (GET, HEAD, POST)", "",
                       "method_not_allowed");
    } catch (const ApiError& e) {
      send_error_and_close(req, res, e);
      return HR::Handled;
    }
    guard_.head_done(req, f.has_body);
    // A refusal of a request with a body closes the connection (the body is not read).
    auto refuse = [&](const ApiError& e) {
      if (f.has_body) send_error_and_close(req, res, e);
      else send_error(req, res, e);
      return HR::Handled;
    };
    if (draining_.load()) return refuse(ApiError(503, "the server is shutting down", "", "shutting_down"));
    // The key as OpenAI's clients send it (Authorization: Bearer) or Anthropic's (x-api-key).
    if (req.path != "/health" && !opt_.api_key.empty() && !key_ok(req.get_header_value("Authorization"), opt_.api_key) &&
        !(req.has_header("x-api-key") && same_key(req.get_header_value("x-api-key"), opt_.api_key)))
      return refuse(ApiError(401, "invalid or missing API key (Authorization: Bearer KEY, or x-api-key: KEY)", "",
                             "invalid_api_key"));
    if (!ready_.load()) return refuse(ApiError(503, "the model is loading", "", "loading"));
    return HR::Unhandled;
  });
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const Request& req, Response& res) {
    if (!res.body.empty() || res.content_provider_) return HR::Unhandled;
    if (res.status == 404)
      send_error(req, res, ApiError(404, "no route " + req.method + " " + printable(req.path), "", "not_found"));
    else if (res.status == 413)
      send_error(req, res, ApiError(413, "the request body exceeds " + std::to_string(opt_.max_body) + " bytes", "",
                               "payload_too_large"));
    else
      send_error(req, res, ApiError(res.status, "HTTP " + std::to_string(res.status)));
    return HR::Handled;
  }));
  s.set_exception_handler([](const Request& req, Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      send_error(req, res, e);
    } catch (const std::exception& e) {
      send_error(req, res, ApiError(500, std::string("internal error: ") + e.what()));
    } catch (...) {
      send_error(req, res, ApiError(500, "internal error"));
    }
  });
  s.set_logger([this](const Request& req, const Response& res) {
    guard_.response_done(req);
    metrics_.requests += 1;
    if (res.status >= 400) metrics_.requests_failed += 1;
  });

  s.Get("/health", [this](const Request& req, Response& res) {
    if (!ready_.load()) return send_error(req, res, ApiError(503, "the model is loading", "", "loading"));
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  s.Get("/metrics", [this](const Request&, Response& res) {
    res.set_content(metrics_.render(), "text/plain; version=0.0.4");
  });
  s.Get("/v1/models", [this](const Request&, Response& res) {
    const Backend& b = *ready_.load();
    nlohmann::json m = {{"id", b.model_name}, {"object", "model"}, {"created", b.created}, {"owned_by", "nvfp4"},
                        {"meta", {{"n_ctx", b.n_ctx}, {"n_vocab", b.tok->n_vocab()}}}};
    res.set_content(dump({{"object", "list"}, {"data", nlohmann::json::array({m})}}), "application/json");
  });
  // POST routes read their body themselves (read_body: the limit holds for every framing), then
  // answer; a body refused part way closes the connection.
  using BodyHandler = std::function<void(const Request&, const std::string&, Response&)>;
  auto with_body = [this](BodyHandler fn) {
    return [this, fn](const Request& req, Response& res, const httplib::ContentReader& reader) {
      std::string body;
      try {
        body = read_body(req, reader, opt_.max_body);
      } catch (const ApiError& e) {
        return send_error_and_close(req, res, e);
      }
      guard_.body_done(req);
      try {
        fn(req, body, res);
      } catch (const ApiError& e) {
        send_error(req, res, e);
      }
      (void)answer_half_closed(req, res);
    };
  };
  auto gen = [this, with_body](bool chat) {
    return with_body([this, chat](const Request& req, const std::string& body, Response& res) {
      std::shared_ptr<std::atomic<int>> n = in_flight_;
      ++*n;
      std::shared_ptr<void> guard(nullptr, [n](void*) { --*n; });
      handle_generation(*ready_.load(), req, body, res, chat, static_cast<uint64_t>(++next_id_), std::move(guard));
    });
  };
  s.Post("/v1/chat/completions", gen(true));
  s.Post("/chat/completions", gen(true));
  // Responses and Messages: translated into chat requests, generated the same way.
  auto counted = [this](const std::function<void(std::shared_ptr<void>)>& fn) {
    std::shared_ptr<std::atomic<int>> n = in_flight_;
    ++*n;
    fn(std::shared_ptr<void>(nullptr, [n](void*) { --*n; }));
  };
  auto responses = with_body([this, counted](const Request& req, const std::string& body, Response& res) {
    counted([&](std::shared_ptr<void> g) {
      handle_responses(*ready_.load(), responses_, req, body, res, static_cast<uint64_t>(++next_id_), std::move(g));
    });
  });
  s.Post("/v1/responses", responses);
  s.Post("/responses", responses);
  s.Post("/v1/messages", with_body([this, counted](const Request& req, const std::string& body, Response& res) {
    counted([&](std::shared_ptr<void> g) {
      handle_messages(*ready_.load(), req, body, res, static_cast<uint64_t>(++next_id_), std::move(g));
    });
  }));
  s.Post("/v1/messages/count_tokens", with_body([this](const Request&, const std::string& body, Response& res) {
    handle_count_tokens(*ready_.load(), body, res);
  }));
  auto embeddings = with_body([this, counted](const Request& req, const std::string& body, Response& res) {
    counted([&](std::shared_ptr<void>) { handle_embeddings(*ready_.load(), req, body, res); });
  });
  s.Post("/v1/embeddings", embeddings);
  s.Post("/embeddings", embeddings);
  s.Post("/v1/completions", gen(false));
  s.Post("/completions", gen(false));
  s.Post("/tokenize", with_body([this](const Request&, const std::string& body, Response& res) {
    const Backend& b = *ready_.load();
    const TokenizeRequest r = parse_tokenize_request(body);
    std::vector<int32_t> ids;
    if (r.add_special && b.tok->add_bos() && b.tok->bos() >= 0) ids.push_back(b.tok->bos());
    for (int32_t id : b.tok->encode(r.content, r.parse_special)) ids.push_back(id);
    res.set_content(dump({{"tokens", ids}}), "application/json");
  }));
  s.Post("/detokenize", with_body([this](const Request&, const std::string& body, Response& res) {
    const Backend& b = *ready_.load();
    const std::vector<int32_t> ids = parse_detokenize_request(body);
    for (int32_t id : ids)
      if (id >= b.tok->n_vocab())
        throw ApiError(400, "'tokens' holds " + std::to_string(id) + ", outside the vocabulary (" +
                                std::to_string(b.tok->n_vocab()) + " tokens)", "tokens", "invalid_value");
    res.set_content(dump({{"content", b.tok->decode(ids)}}), "application/json");
  }));
  // Any other POST: its body is read under the same limit (httplib's own reading has none for a
  // chunked body), then 404.
  s.Post(".*", with_body([](const Request& req, const std::string&, Response&) {
    throw ApiError(404, "no route POST " + printable(req.path), "", "not_found");
  }));
}

}  // namespace nvfp4::server

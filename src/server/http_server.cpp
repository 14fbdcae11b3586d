#include "server/http_server.h"

#include <httplib.h>

#include <thread>

#include "nvfp4/error.h"
#include "server/api_error.h"
#include "server/completions.h"
#include "server/openai_json.h"
#include "server/request.h"

namespace nvfp4::server {
namespace {

using httplib::Request;
using httplib::Response;
using HR = httplib::Server::HandlerResponse;

void send_error(Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump(error_json(e)), "application/json");
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

}  // namespace

HttpServer::HttpServer(const ServerOptions& opt, Metrics& metrics)
    : opt_(opt), metrics_(metrics), svr_(std::make_unique<httplib::Server>()) {
  const int n = std::max(2, opt_.http_threads);
  svr_->new_task_queue = [n] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  svr_->set_payload_max_length(opt_.max_body);
  svr_->set_keep_alive_timeout(2);
  svr_->set_read_timeout(30);
  svr_->set_write_timeout(30);
  routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const int port = opt_.port == 0 ? svr_->bind_to_any_port(opt_.host)
                                  : (svr_->bind_to_port(opt_.host, opt_.port) ? opt_.port : -1);
  if (port < 0)
    throw Error(opt_.host + ":" + std::to_string(opt_.port), "", "cannot listen", "a free port on a local address",
                "bind failed");
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
}

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
    if (req.path == "/health") return HR::Unhandled;
    if (!opt_.api_key.empty()) {
      const std::string h = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      const bool ok = h.size() > prefix.size() && h.compare(0, prefix.size(), prefix) == 0 &&
                      same_key(h.substr(prefix.size()), opt_.api_key);
      if (!ok) {
        send_error(res, ApiError(401, "invalid or missing API key (Authorization: Bearer KEY)", "", "invalid_api_key"));
        return HR::Handled;
      }
    }
    if (!ready_.load()) {
      send_error(res, ApiError(503, "the model is loading", "", "loading"));
      return HR::Handled;
    }
    return HR::Unhandled;
  });
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const Request& req, Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return HR::Unhandled;
    if (res.status == 404)
      send_error(res, ApiError(404, "no route " + req.method + " " + printable(req.path), "", "not_found"));
    else if (res.status == 413)
      send_error(res, ApiError(413, "the request body exceeds " + std::to_string(opt_.max_body) + " bytes", "",
                               "payload_too_large"));
    else
      send_error(res, ApiError(res.status, "HTTP " + std::to_string(res.status)));
    return HR::Handled;
  }));
  s.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, std::string("internal error: ") + e.what()));
    } catch (...) {
      send_error(res, ApiError(500, "internal error"));
    }
  });
  s.set_logger([this](const Request&, const Response& res) {
    metrics_.requests += 1;
    if (res.status >= 400) metrics_.requests_failed += 1;
  });

  s.Get("/health", [this](const Request&, Response& res) {
    if (!ready_.load()) return send_error(res, ApiError(503, "the model is loading", "", "loading"));
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
  auto gen = [this](bool chat) {
    return [this, chat](const Request& req, Response& res) {
      try {
        std::shared_ptr<std::atomic<int>> n = in_flight_;
        ++*n;
        std::shared_ptr<void> guard(nullptr, [n](void*) { --*n; });
        handle_generation(*ready_.load(), req, res, chat, static_cast<uint64_t>(++next_id_), std::move(guard));
      } catch (const ApiError& e) {
        send_error(res, e);
      }
    };
  };
  s.Post("/v1/chat/completions", gen(true));
  s.Post("/chat/completions", gen(true));
  s.Post("/v1/completions", gen(false));
  s.Post("/completions", gen(false));
  s.Post("/tokenize", [this](const Request& req, Response& res) {
    try {
      const Backend& b = *ready_.load();
      const TokenizeRequest r = parse_tokenize_request(req.body);
      std::vector<int32_t> ids;
      if (r.add_special && b.tok->add_bos() && b.tok->bos() >= 0) ids.push_back(b.tok->bos());
      for (int32_t id : b.tok->encode(r.content, r.parse_special)) ids.push_back(id);
      res.set_content(dump({{"tokens", ids}}), "application/json");
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });
  s.Post("/detokenize", [this](const Request& req, Response& res) {
    try {
      const Backend& b = *ready_.load();
      const std::vector<int32_t> ids = parse_detokenize_request(req.body);
      for (int32_t id : ids)
        if (id >= b.tok->n_vocab())
          throw ApiError(400, "'tokens' holds " + std::to_string(id) + ", outside the vocabulary (" +
                                  std::to_string(b.tok->n_vocab()) + " tokens)", "tokens", "invalid_value");
      res.set_content(dump({{"content", b.tok->decode(ids)}}), "application/json");
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });
}

}  // namespace nvfp4::server

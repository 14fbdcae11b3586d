// Runs `nvfp4 serve` on 127.0.0.1 (port 0: the one it prints) for the HTTP tests, and talks to it.
#pragma once
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <functional>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace nvfp4::test {

class ServeProcess {
 public:
  // Starts the server and waits (up to `timeout`) until it listens; ready() waits for the model.
  ServeProcess(const std::vector<std::string>& args, std::chrono::seconds timeout = std::chrono::seconds(120)) {
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    log_ = (std::filesystem::temp_directory_path() / ("nvfp4_serve_" + std::to_string(::getpid()) + "_" +
                                                        std::to_string(stamp) + ".log")).string();
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
      ::dup2(fd, 1);
      std::vector<char*> argv;
      std::string bin = NVFP4_BINARY;
      argv.push_back(bin.data());
      std::vector<std::string> copy = args;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      ::_exit(127);
    }
    const auto end = std::chrono::steady_clock::now() + timeout;
    const std::regex re("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    while (std::chrono::steady_clock::now() < end && port_ == 0) {
      std::smatch m;
      const std::string s = log();
      if (std::regex_search(s, m, re)) port_ = std::stoi(m[1]);
      else std::this_thread::sleep_for(std::chrono::milliseconds(20));
      int st = 0;
      if (port_ == 0 && ::waitpid(pid_, &st, WNOHANG) == pid_) {
        // Exited already (a model that fails at once): its log still says where it listened.
        pid_ = -1;
        exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        const std::string last = log();
        if (std::regex_search(last, m, re)) port_ = std::stoi(m[1]);
        break;
      }
    }
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    std::error_code ec;
    std::filesystem::remove(log_, ec);
  }
  int port() const { return port_; }
  std::string log() const {
    std::ifstream f(log_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  // Waits until GET /health says 200.
  bool ready(std::chrono::seconds timeout = std::chrono::seconds(300)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end && port_ > 0) {
      httplib::Client c("127.0.0.1", port_);
      if (auto r = c.Get("/health"); r && r->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  // SIGTERM; the exit status (-1: did not exit within `timeout`).
  int terminate(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    return terminate_wait(timeout);
  }
  // The exit status once it exits by itself (-1: not within `timeout`).
  int terminate_wait(std::chrono::seconds timeout) {
    if (pid_ <= 0) return exit_status_;
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return exit_status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_status_ = -1;  // once reaped
  std::string log_;
};

struct Reply {
  int status = 0;  // 0: no response
  std::string body;
  nlohmann::json json;  // null when the body is not JSON
};

inline Reply post(int port, const std::string& path, const std::string& body, const std::string& key = "") {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300);
  httplib::Headers h;
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  Reply r;
  if (auto res = c.Post(path.c_str(), h, body, "application/json")) {
    r.status = res->status;
    r.body = res->body;
    r.json = nlohmann::json::parse(r.body, nullptr, false);
    if (r.json.is_discarded()) r.json = nullptr;
  }
  return r;
}

inline Reply get(int port, const std::string& path, const std::string& key = "") {
  httplib::Client c("127.0.0.1", port);
  httplib::Headers h;
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  Reply r;
  if (auto res = c.Get(path.c_str(), h)) {
    r.status = res->status;
    r.body = res->body;
    r.json = nlohmann::json::parse(r.body, nullptr, false);
    if (r.json.is_discarded()) r.json = nullptr;
  }
  return r;
}

// A streamed request: the events' JSON in order (the [DONE] marker as the string "[DONE]").
// on_event returns false to hang up.
struct StreamReply {
  int status = 0;
  std::vector<nlohmann::json> events;
  bool done = false;  // saw data: [DONE]
};

inline StreamReply post_stream(int port, const std::string& path, const std::string& body,
                               const std::function<bool(const nlohmann::json&)>& on_event = nullptr) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300);
  StreamReply out;
  std::string buf;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&](const httplib::Response& r) {
    out.status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    buf.append(d, n);
    size_t at;
    while ((at = buf.find("\n\n")) != std::string::npos) {
      std::string ev = buf.substr(0, at);
      buf.erase(0, at + 2);
      if (ev.rfind("data: ", 0) != 0) continue;
      ev.erase(0, 6);
      if (ev == "[DONE]") {
        out.done = true;
        continue;
      }
      out.events.push_back(nlohmann::json::parse(ev, nullptr, false));
      if (on_event && !on_event(out.events.back())) return false;
    }
    return true;
  };
  c.send(req);
  return out;
}

// A number of the Prometheus text, -1 when absent.
inline double metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return -1;
}

// One completion as a client sees it, whole or streamed (the chunks put together): the returned
// tokens (`return_tokens`), the text, the finish reason, each token's logprobs entry (its JSON,
// dumped, top alternatives included) and the llama-server style `timings` of a speculative server.
struct Completion {
  int status = 0;
  std::vector<int32_t> tokens;
  std::string text, finish;
  std::vector<std::string> logprobs;
  int64_t draft_n = -1, draft_n_accepted = -1;  // timings (non-streamed replies)
};

inline void take_logprobs(Completion& o, bool chat, const nlohmann::json& lp) {
  if (lp.is_null()) return;
  if (chat) {
    for (const nlohmann::json& t : lp["content"]) o.logprobs.push_back(t.dump());
    return;
  }
  for (size_t k = 0; k < lp["token_logprobs"].size(); ++k)
    o.logprobs.push_back(lp["token_logprobs"][k].dump() + (lp.contains("top_logprobs") ? lp["top_logprobs"][k].dump() : ""));
}

// POSTs body (a chat completion when it has "messages", else a completion), streamed or not.
inline Completion complete(int port, nlohmann::json body, bool stream) {
  const bool chat = body.contains("messages");
  const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
  Completion o;
  if (!stream) {
    const Reply r = post(port, path, body.dump());
    o.status = r.status;
    if (r.status != 200) return o;
    const nlohmann::json& c = r.json["choices"][0];
    o.tokens = c["tokens"].get<std::vector<int32_t>>();
    o.text = chat ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>();
    o.finish = c["finish_reason"];
    take_logprobs(o, chat, c["logprobs"]);
    if (r.json.contains("timings")) {
      o.draft_n = r.json["timings"]["draft_n"];
      o.draft_n_accepted = r.json["timings"]["draft_n_accepted"];
    }
    return o;
  }
  body["stream"] = true;
  const StreamReply s = post_stream(port, path, body.dump());
  o.status = s.done ? s.status : -1;
  for (const nlohmann::json& e : s.events) {
    if (!e.contains("choices") || e["choices"].empty()) continue;
    const nlohmann::json& c = e["choices"][0];
    if (c.contains("tokens"))
      for (int32_t t : c["tokens"]) o.tokens.push_back(t);
    if (chat && c["delta"].contains("content")) o.text += c["delta"]["content"].get<std::string>();
    if (!chat) o.text += c["text"].get<std::string>();
    if (c.contains("finish_reason") && c["finish_reason"].is_string()) o.finish = c["finish_reason"];
    take_logprobs(o, chat, c["logprobs"]);
  }
  return o;
}

}  // namespace nvfp4::test

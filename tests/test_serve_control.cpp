// `nvfp4 serve` with one slot, a queue of one and an API key: 401, 429, 503 while loading, and a
// SIGTERM in the middle of a stream (the stream ends, the process exits 0).
#include <gtest/gtest.h>

#include <future>

#include "model_path.h"
#include "serve_util.h"

namespace nvfp4::test {
namespace {

using nlohmann::json;

TEST(ServeControl, ApiKeyFullQueueAndSigterm) {
  NVFP4_REQUIRE_SMOLLM2(model);
  ServeProcess s({"serve", "-m", model, "--quantize", "-t", "2", "--port", "0", "--ctx", "256", "--parallel", "1",
                  "--queue", "1", "--api-key", "sekrit", "--shutdown-grace", "1"});
  ASSERT_GT(s.port(), 0) << s.log();
  const int port = s.port();
  // Before the model is loaded every route but /health answers 503 (it may already be loaded).
  const Reply early = get(port, "/v1/models", "sekrit");
  EXPECT_TRUE(early.status == 503 || early.status == 200) << early.body;
  if (early.status == 503) {
    EXPECT_EQ(early.json["error"]["code"], "loading");
  }
  ASSERT_TRUE(s.ready()) << s.log();

  // API key: /health needs none; everything else needs the right one.
  EXPECT_EQ(get(port, "/health").status, 200);
  for (const std::string key : {"", "sekri", "sekrit2", "SEKRIT"}) {
    const Reply r = get(port, "/v1/models", key);
    EXPECT_EQ(r.status, 401) << key;
    EXPECT_EQ(r.json["error"]["type"], "authentication_error") << r.body;
  }
  EXPECT_EQ(get(port, "/v1/models", "sekrit").status, 200);

  // One slot busy with a long stream, one request waiting: the next one gets 429.
  const json longreq = {{"prompt", "Once upon a time"}, {"max_tokens", 230}, {"temperature", 0.7}, {"seed", 3},
                        {"stream", true}};
  std::promise<void> first_chunk;
  std::atomic<bool> hang_up{false};
  auto streamer = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(300);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = longreq.dump();
    req.set_header("Authorization", "Bearer sekrit");
    bool said = false;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      if (!said) first_chunk.set_value();
      said = true;
      return !hang_up.load();
    };
    c.send(req);
  });
  first_chunk.get_future().wait();
  auto waiter = std::async(std::launch::async, [&] {
    return post(port, "/v1/completions", R"({"prompt":"Hi","max_tokens":2,"temperature":0})", "sekrit");
  });
  double depth = 0;
  for (int i = 0; i < 500 && depth < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    depth = metric(get(port, "/metrics", "sekrit").body, "nvfp4_queue_depth");
  }
  ASSERT_EQ(depth, 1);
  const Reply full = post(port, "/v1/completions", R"({"prompt":"Hi","max_tokens":2})", "sekrit");
  EXPECT_EQ(full.status, 429) << full.body;
  EXPECT_EQ(full.json["error"]["type"], "rate_limit_error");
  hang_up = true;  // frees the slot: the waiting request runs
  streamer.get();
  const Reply w = waiter.get();
  EXPECT_EQ(w.status, 200) << w.body;

  // SIGTERM during a stream: it ends (finished or cancelled, then [DONE]) and the server exits 0.
  std::promise<void> started;
  auto last = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(300);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = longreq.dump();
    req.set_header("Authorization", "Bearer sekrit");
    std::string all;
    bool said = false;
    req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
      all.append(d, n);
      if (!said) started.set_value();
      said = true;
      return true;
    };
    c.send(req);
    return all;
  });
  started.get_future().wait();
  EXPECT_EQ(s.terminate(), 0) << s.log();
  const std::string all = last.get();
  EXPECT_NE(all.find("data: [DONE]"), std::string::npos) << all.substr(all.size() > 300 ? all.size() - 300 : 0);
  // The server is gone.
  httplib::Client c("127.0.0.1", port);
  EXPECT_FALSE(c.Get("/health"));
}

}  // namespace
}  // namespace nvfp4::test

namespace nvfp4::test {
namespace {

// A model that cannot be loaded: the server, already listening, says why and exits 1.
TEST(ServeControl, ExitsOneWhenTheModelDoesNotLoad) {
  ServeProcess s({"serve", "-m", "/nonexistent/model.gguf", "--port", "0"});
  ASSERT_GT(s.port(), 0) << s.log();
  EXPECT_EQ(s.terminate_wait(std::chrono::seconds(30)), 1) << s.log();
  EXPECT_NE(s.log().find("/nonexistent/model.gguf"), std::string::npos) << s.log();
}

// A port another server listens on is refused (exit 1, naming the address), not shared: httplib's
// default SO_REUSEPORT let two servers split one port's connections between them.
TEST(ServeControl, APortInUseIsRefused) {
  NVFP4_REQUIRE_SMOLLM2(model);
  ServeProcess first({"serve", "-m", model, "--quantize", "--port", "0", "--ctx", "64"});
  ASSERT_GT(first.port(), 0) << first.log();
  const std::string port = std::to_string(first.port());
  ServeProcess second({"serve", "-m", model, "--quantize", "--port", port, "--ctx", "64"}, std::chrono::seconds(20));
  EXPECT_EQ(second.port(), 0) << second.log();
  EXPECT_EQ(second.terminate_wait(std::chrono::seconds(30)), 1) << second.log();
  EXPECT_NE(second.log().find("127.0.0.1:" + port), std::string::npos) << second.log();
  EXPECT_NE(second.log().find("cannot listen"), std::string::npos) << second.log();
  ASSERT_TRUE(first.ready()) << first.log();
}

}  // namespace
}  // namespace nvfp4::test

namespace nvfp4::test {
namespace {

using nlohmann::json;

// Posts and hangs up after `ms` milliseconds without an answer (the client closes its socket).
void post_and_leave(int port, const json& body, int ms) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(0, ms * 1000);
  c.Post("/v1/completions", body.dump(), "application/json");
}

// Waits up to 5 s for a metric to reach `want`; its last value.
double await_metric(int port, const char* name, double want) {
  double v = metric(get(port, "/metrics").body, name);
  for (int i = 0; i < 500 && v != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    v = metric(get(port, "/metrics").body, name);
  }
  return v;
}

// One slot busy with a stream: a request waiting behind it whose client leaves (whole or
// streamed, before any byte was sent) is dropped from the queue at once; a whole (non-streamed)
// request whose client leaves mid-generation frees its slot at once.
TEST(ServeControl, ClientsThatLeaveAreNoticedAtOnce) {
  NVFP4_REQUIRE_SMOLLM2(model);
  ServeProcess s({"serve", "-m", model, "--quantize", "-t", "2", "--port", "0", "--ctx", "256", "--parallel", "1",
                  "--queue", "4"});
  ASSERT_TRUE(s.ready()) << s.log();
  const int port = s.port();
  const json longreq = {{"prompt", "Once upon a time"}, {"max_tokens", 230}, {"temperature", 0.7}, {"seed", 3},
                        {"stream", true}};
  std::promise<void> first_chunk;
  std::atomic<bool> hang_up{false};
  auto streamer = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(300);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = longreq.dump();
    bool said = false;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      if (!said) first_chunk.set_value();
      said = true;
      return !hang_up.load();
    };
    c.send(req);
  });
  first_chunk.get_future().wait();
  json whole = {{"prompt", "Hello"}, {"max_tokens", 4}, {"temperature", 0}};
  post_and_leave(port, whole, 300);
  EXPECT_EQ(await_metric(port, "nvfp4_generations_cancelled_total", 1), 1);
  EXPECT_EQ(metric(get(port, "/metrics").body, "nvfp4_queue_depth"), 0);
  json streamed = whole;
  streamed["stream"] = true;
  post_and_leave(port, streamed, 300);
  EXPECT_EQ(await_metric(port, "nvfp4_generations_cancelled_total", 2), 2);
  EXPECT_EQ(metric(get(port, "/metrics").body, "nvfp4_queue_depth"), 0);
  EXPECT_EQ(metric(get(port, "/metrics").body, "nvfp4_slots_active"), 1) << "the stream still runs";
  hang_up = true;
  streamer.get();
  EXPECT_EQ(await_metric(port, "nvfp4_slots_active", 0), 0);
  EXPECT_EQ(await_metric(port, "nvfp4_generations_cancelled_total", 3), 3);

  // A whole request mid-generation.
  const double before = metric(get(port, "/metrics").body, "nvfp4_generated_tokens_total");
  json gen = longreq;
  gen.erase("stream");
  post_and_leave(port, gen, 400);
  EXPECT_EQ(await_metric(port, "nvfp4_generations_cancelled_total", 4), 4);
  EXPECT_EQ(await_metric(port, "nvfp4_slots_active", 0), 0);
  EXPECT_LT(metric(get(port, "/metrics").body, "nvfp4_generated_tokens_total") - before, 230);
  EXPECT_EQ(s.terminate(), 0) << s.log();
}

}  // namespace
}  // namespace nvfp4::test

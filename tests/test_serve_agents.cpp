// `nvfp4 serve`'s /v1/responses and /v1/messages over HTTP on the bundled SmolLM2 with Qwen3's
// template (its tokens are ChatML's): greedy, both give the tool call, text and token counts that
// /v1/chat/completions gives for the same conversation, whole and streamed; the previous_response_id
// chain; each route's error shape and the API key in x-api-key. (tools/test_serve_agents.py runs
// the real openai and anthropic clients.)
#include <gtest/gtest.h>

#include "model_path.h"
#include "serve_util.h"

namespace nvfp4::test {
namespace {

// Bodies keep their key order, as clients send them (templates print tools in that order).
using json = nlohmann::ordered_json;
using Json = nlohmann::json;

class ServeAgents : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string m = smollm2_path();
    if (m.empty()) return;
    server_ = new ServeProcess({"serve", "-m", m, "--quantize", "--precision", "a16q8", "-t", "2", "--port", "0", "--ctx",
                                "512", "--parallel", "2", "--chat-template", "qwen3", "--api-key", "k"});
    if (!server_->ready()) {
      ADD_FAILURE() << "server did not come up:\n" << server_->log();
      delete server_;
      server_ = nullptr;
    }
  }
  static void TearDownTestSuite() {
    if (server_) EXPECT_EQ(server_->terminate(), 0) << server_->log();
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (smollm2_path().empty()) GTEST_SKIP() << "SmolLM2 GGUF not found: set NVFP4_SMOLLM2_GGUF";
    ASSERT_NE(server_, nullptr);
    port_ = server_->port();
  }
  static ServeProcess* server_;
  int port_ = 0;
};
ServeProcess* ServeAgents::server_ = nullptr;

json user(const std::string& city) { return {{"role", "user"}, {"content", "What is the weather in " + city + "?"}}; }

const json kSchema = json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");

// The few-shot conversation (two earlier calls to imitate) in each API's shape.
json chat_body() {
  json calls = json::array();
  json msgs = json::array();
  int i = 0;
  for (const char* city : {"Paris", "Rome"}) {
    msgs.push_back(user(city));
    msgs.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({{
        {"id", "call0000" + std::to_string(++i)}, {"type", "function"},
        {"function", {{"name", "get_weather"}, {"arguments", json({{"city", city}}).dump()}}}}})}});
  }
  msgs.push_back(user("Berlin"));
  return {{"messages", msgs}, {"max_tokens", 48}, {"temperature", 0},
          {"tools", json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", kSchema}}}}})}};
}

json responses_body() {
  json items = json::array();
  int i = 0;
  for (const char* city : {"Paris", "Rome"}) {
    items.push_back(user(city));
    items.push_back({{"type", "function_call"}, {"call_id", "call0000" + std::to_string(++i)}, {"name", "get_weather"},
                     {"arguments", json({{"city", city}}).dump()}});
  }
  items.push_back(user("Berlin"));
  return {{"input", items}, {"max_output_tokens", 48}, {"temperature", 0},
          {"tools", json::array({{{"type", "function"}, {"name", "get_weather"}, {"parameters", kSchema}}})}};
}

json messages_body() {
  json msgs = json::array();
  int i = 0;
  for (const char* city : {"Paris", "Rome"}) {
    msgs.push_back(user(city));
    msgs.push_back({{"role", "assistant"}, {"content", json::array({{{"type", "tool_use"},
        {"id", "call0000" + std::to_string(++i)}, {"name", "get_weather"}, {"input", {{"city", city}}}}})}});
  }
  msgs.push_back(user("Berlin"));
  return {{"messages", msgs}, {"max_tokens", 48}, {"temperature", 0},
          {"tools", json::array({{{"name", "get_weather"}, {"input_schema", kSchema}}})}};
}

// The events of an SSE response: (event name, data).
std::vector<std::pair<std::string, json>> events(int port, const std::string& path, const json& body, int& status) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300);
  std::string buf;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.set_header("x-api-key", "k");
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    buf.append(d, n);
    return true;
  };
  EXPECT_TRUE(c.send(req));
  std::vector<std::pair<std::string, json>> out;
  size_t at = 0, end;
  while ((end = buf.find("\n\n", at)) != std::string::npos) {
    const std::string ev = buf.substr(at, end - at);
    at = end + 2;
    const size_t nl = ev.find('\n');
    EXPECT_EQ(ev.rfind("event: ", 0), 0u) << ev;
    EXPECT_EQ(ev.compare(nl + 1, 6, "data: "), 0) << ev;
    out.emplace_back(ev.substr(7, nl - 7), json::parse(ev.substr(nl + 7)));
    EXPECT_EQ(out.back().first, out.back().second["type"]);
  }
  return out;
}

TEST_F(ServeAgents, ResponsesGiveTheChatRoutesCallAndTokens) {
  const Reply chat = post(port_, "/v1/chat/completions", chat_body().dump(), "k");
  ASSERT_EQ(chat.status, 200) << chat.body;
  const Json& msg = chat.json["choices"][0]["message"];
  ASSERT_EQ(chat.json["choices"][0]["finish_reason"], "tool_calls") << chat.body;
  const Json want_args = Json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>());

  const Reply r = post(port_, "/v1/responses", responses_body().dump(), "k");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["status"], "completed");
  EXPECT_EQ(r.json["usage"]["input_tokens"], chat.json["usage"]["prompt_tokens"]);
  EXPECT_EQ(r.json["usage"]["output_tokens"], chat.json["usage"]["completion_tokens"]);
  const Json& out = r.json["output"];
  ASSERT_EQ(out.size(), 1u) << r.body;
  EXPECT_EQ(out[0]["type"], "function_call");
  EXPECT_EQ(out[0]["name"], "get_weather");
  EXPECT_EQ(Json::parse(out[0]["arguments"].get<std::string>()), want_args);

  int status = 0;
  json body = responses_body();
  body["stream"] = true;
  const auto ev = events(port_, "/v1/responses", body, status);
  ASSERT_EQ(status, 200);
  ASSERT_GE(ev.size(), 4u);
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].second["sequence_number"], static_cast<int64_t>(i));
  EXPECT_EQ(ev.front().first, "response.created");
  EXPECT_EQ(ev.back().first, "response.completed");
  const json& fin = ev.back().second["response"];
  EXPECT_EQ(fin["usage"]["input_tokens"].get<int64_t>(), r.json["usage"]["input_tokens"].get<int64_t>());
  EXPECT_EQ(fin["usage"]["output_tokens"].get<int64_t>(), r.json["usage"]["output_tokens"].get<int64_t>());
  ASSERT_EQ(fin["output"].size(), 1u);
  EXPECT_EQ(fin["output"][0]["arguments"].get<std::string>(), out[0]["arguments"].get<std::string>());

  // The result by previous_response_id: the chat route's answer to the same turns.
  json turn = chat_body();
  turn["messages"].push_back(json::parse(msg.dump()));
  turn["messages"].push_back({{"role", "tool"}, {"tool_call_id", msg["tool_calls"][0]["id"].get<std::string>()}, {"content", "21 C"}});
  turn["max_tokens"] = 16;
  const Reply chat2 = post(port_, "/v1/chat/completions", turn.dump(), "k");
  json next = {{"previous_response_id", r.json["id"].get<std::string>()}, {"max_output_tokens", 16}, {"temperature", 0},
               {"tools", responses_body()["tools"]},
               {"input", json::array({{{"type", "function_call_output"}, {"call_id", out[0]["call_id"].get<std::string>()},
                                       {"output", "21 C"}}})}};
  const Reply r2 = post(port_, "/v1/responses", next.dump(), "k");
  ASSERT_EQ(r2.status, 200) << r2.body;
  EXPECT_EQ(r2.json["usage"]["input_tokens"], chat2.json["usage"]["prompt_tokens"]);
  std::string text;
  for (const Json& item : r2.json["output"])
    if (item["type"] == "message") text += item["content"][0]["text"].get<std::string>();
  EXPECT_EQ(text, chat2.json["choices"][0]["message"]["content"].is_string()
                      ? chat2.json["choices"][0]["message"]["content"].get<std::string>() : "");

  next["previous_response_id"] = "resp_unknown";
  const Reply gone = post(port_, "/v1/responses", next.dump(), "k");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.json["error"]["param"], "previous_response_id") << gone.body;
  const Reply bad = post(port_, "/v1/responses", R"({"input":[{"type":"computer_call"}]})", "k");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json["error"]["param"], "input[0].type") << bad.body;
}

TEST_F(ServeAgents, MessagesGiveTheChatRoutesCallAndTokens) {
  const Reply chat = post(port_, "/v1/chat/completions", chat_body().dump(), "k");
  ASSERT_EQ(chat.status, 200) << chat.body;
  const Json want_args =
      Json::parse(chat.json["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>());

  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(300);
  const httplib::Headers h = {{"x-api-key", "k"}, {"anthropic-version", "2023-06-01"}};
  auto res = c.Post("/v1/messages", h, messages_body().dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const Json m = Json::parse(res->body);
  EXPECT_EQ(m["stop_reason"], "tool_use");
  EXPECT_EQ(m["usage"]["input_tokens"], chat.json["usage"]["prompt_tokens"]);
  EXPECT_EQ(m["usage"]["output_tokens"], chat.json["usage"]["completion_tokens"]);
  ASSERT_EQ(m["content"].size(), 1u) << res->body;
  EXPECT_EQ(m["content"][0]["type"], "tool_use");
  EXPECT_EQ(m["content"][0]["input"], want_args);

  int status = 0;
  json body = messages_body();
  body["stream"] = true;
  const auto ev = events(port_, "/v1/messages", body, status);
  ASSERT_EQ(status, 200);
  ASSERT_GE(ev.size(), 5u);
  EXPECT_EQ(ev.front().first, "message_start");
  EXPECT_EQ(ev[ev.size() - 2].first, "message_delta");
  EXPECT_EQ(ev.back().first, "message_stop");
  EXPECT_EQ(ev[ev.size() - 2].second["delta"]["stop_reason"], "tool_use");
  std::string args;
  for (const auto& [name, data] : ev)
    if (name == "content_block_delta" && data["delta"]["type"] == "input_json_delta")
      args += data["delta"]["partial_json"].get<std::string>();
  EXPECT_EQ(Json::parse(args), want_args);

  // Errors in Anthropic's shape, on every refusal of this route.
  res = c.Post("/v1/messages", h, R"({"messages":[{"role":"user","content":"x"}]})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  const Json e = Json::parse(res->body);
  EXPECT_EQ(e["type"], "error");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("'max_tokens'"), std::string::npos) << res->body;
  res = c.Post("/v1/messages", {{"x-api-key", "wrong"}}, messages_body().dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(Json::parse(res->body)["error"]["type"], "authentication_error") << res->body;
  // count_tokens: the chat route's prompt size.
  res = c.Post("/v1/messages/count_tokens", h, messages_body().dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(Json::parse(res->body)["input_tokens"], chat.json["usage"]["prompt_tokens"]) << res->body;
}

}  // namespace
}  // namespace nvfp4::test

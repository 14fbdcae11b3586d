// /v1/responses and /v1/messages without a model: their bodies translated into chat requests
// (messages, tools, tool_choice, template variables), every refusal naming its field, the output
// items and stream events in each API's shape, the response store's bound and expiry.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/messages_api.h"
#include "server/messages_request.h"
#include "server/response_store.h"
#include "server/responses_api.h"
#include "server/responses_request.h"
#include "server/text_stream.h"

namespace nvfp4::server {
namespace {

using nlohmann::json;

template <class F>
ApiError refusal_of(F&& f, const std::string& body) {
  try {
    f(body);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

TEST(ServerResponses, InputItemsBecomeChatMessages) {
  const ResponsesRequest r = parse_responses_request(R"({
    "model": "m", "instructions": "Be brief.", "max_output_tokens": 9, "temperature": 0, "top_p": 0.5,
    "input": [
      {"role": "user", "content": "Weather in Paris?"},
      {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "think"}]},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me see."}]},
      {"type": "function_call", "call_id": "abc123XYZ", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
      {"type": "function_call_output", "call_id": "abc123XYZ", "output": "18 C"},
      {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]}
    ],
    "tools": [{"type": "function", "name": "get_weather", "description": "d", "strict": true,
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    "tool_choice": {"type": "function", "name": "get_weather"},
    "reasoning": {"effort": "none"}, "store": false, "stream": true})");
  EXPECT_EQ(r.max_output_tokens, 9);
  EXPECT_EQ(r.gen.max_tokens, 9);
  EXPECT_EQ(r.gen.max_tokens_field, "max_output_tokens");
  EXPECT_EQ(r.gen.prompt_field, "input");
  EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.gen.sampling.top_p, 0.5f);
  EXPECT_TRUE(r.gen.stream);
  EXPECT_FALSE(r.store);
  const auto m = responses_messages(r, {});
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[0].content, "Be brief.");
  EXPECT_EQ(m[1].role, "user");
  // reasoning, the assistant message and the call: one assistant turn
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(m[2].reasoning_content.value_or(""), "think");
  EXPECT_EQ(m[2].content, "Let me see.");
  ASSERT_EQ(m[2].tool_calls.size(), 1u);
  EXPECT_EQ(m[2].tool_calls[0].id, "abc123XYZ");
  EXPECT_EQ(m[2].tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(m[3].role, "tool");
  EXPECT_EQ(m[3].tool_call_id.value_or(""), "abc123XYZ");
  EXPECT_EQ(m[3].name.value_or(""), "get_weather");
  EXPECT_EQ(m[3].content, "18 C");
  EXPECT_EQ(m[4].role, "system");
  EXPECT_EQ(m[4].content, "ab");
  // The chat route's tools (Responses' flat shape moved under "function", strict dropped), in order.
  EXPECT_EQ(r.gen.tools_json,
            R"([{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object",)"
            R"("properties":{"city":{"type":"string"}}}}}])");
  EXPECT_EQ(r.gen.tool_choice, "function");
  EXPECT_EQ(r.gen.tool_choice_name, "get_weather");
  EXPECT_EQ(r.gen.template_vars.at("tool_choice"), R"({"type":"function","function":{"name":"get_weather"}})");
  EXPECT_EQ(r.gen.template_vars.at("enable_thinking"), "false");
  EXPECT_EQ(r.gen.template_vars.at("reasoning_effort"), "\"none\"");

  // A string input is one user message; history goes between the instructions and the input,
  // and an output answering a call of the history is named after it.
  const ResponsesRequest s = parse_responses_request(
      R"({"input": [{"type": "function_call_output", "call_id": "c1", "output": "ok"}], "previous_response_id": "resp_1"})");
  ChatMessage prev("assistant", "");
  prev.tool_calls.push_back({"c1", "f", "{}"});
  const auto m2 = responses_messages(s, {ChatMessage("user", "u"), prev});
  ASSERT_EQ(m2.size(), 3u);
  EXPECT_EQ(m2[2].name.value_or(""), "f");
  EXPECT_EQ(parse_responses_request(R"({"input": "hi"})").input.at(0).content, "hi");
  EXPECT_EQ(parse_responses_request(R"({"input": "hi", "reasoning": {"effort": "high"}})").gen.template_vars.at(
                "enable_thinking"), "true");
  EXPECT_EQ(parse_responses_request(R"({"input": "hi"})").gen.max_tokens, -1);
}

TEST(ServerResponses, RefusalsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({})", "input"},
      {R"({"input": 5})", "input"},
      {R"({"input": [5]})", "input[0]"},
      {R"({"input": [{"content": "x"}]})", "input[0].type"},
      {R"({"input": [{"type": "computer_call_output"}]})", "input[0].type"},
      {R"({"input": [{"type": "message", "content": "x"}]})", "input[0].role"},
      {R"({"input": [{"role": "tool", "content": "x"}]})", "input[0].role"},
      {R"({"input": [{"role": "user"}]})", "input[0].content"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]})", "input[0].content[0].type"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_text"}]}]})", "input[0].content[0].text"},
      {R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})", "input[0].call_id"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]})", "input[0].name"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]})", "input[0].arguments"},
      {R"({"input": [{"type": "function_call_output", "call_id": "c"}]})", "input[0].output"},
      {R"({"input": [{"type": "reasoning", "summary": [{"type": "summary_text"}]}]})", "input[0].summary[0].text"},
      {R"({"input": "x", "instructions": 3})", "instructions"},
      {R"({"input": "x", "tools": {}})", "tools"},
      {R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools[0].type"},
      {R"({"input": "x", "tools": [{"type": "function"}]})", "tools[0].name"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "a b"}]})", "tools[0].name"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": "{}"}]})", "tools[0].parameters"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f"}, {"type": "function", "name": "f"}]})", "tools[1].name"},
      {R"({"input": "x", "tool_choice": "required"})", "tool_choice"},
      {R"({"input": "x", "tool_choice": "sometimes"})", "tool_choice"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": {"type": "function", "name": "g"}})",
       "tool_choice.name"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens"},
      {R"({"input": "x", "max_output_tokens": "9"})", "max_output_tokens"},
      {R"({"input": "x", "temperature": 3})", "temperature"},
      {R"({"input": "x", "top_p": 0})", "top_p"},
      {R"({"input": "x", "reasoning": {"effort": "extreme"}})", "reasoning.effort"},
      {R"({"input": "x", "reasoning": "high"})", "reasoning"},
      {R"({"input": "x", "stream": "yes"})", "stream"},
      {R"({"input": "x", "previous_response_id": 7})", "previous_response_id"},
      {R"({"input": "x", "text": {"format": {"type": "xml"}}})", "text.format.type"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema"}}})", "text.format.name"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "n", "schema": {"oneOf": []}}}})",
       "text.format.schema.oneOf"},
      {R"({"input": "x", "background": true})", "background"},
  };
  for (const auto& [body, param] : cases) {
    const ApiError e = refusal_of([](const std::string& b) { (void)parse_responses_request(b); }, body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(param), std::string::npos) << e.what();
  }
  for (const char* bad : {"", "[]", "{\"input\":", "\xff"})
    EXPECT_EQ(refusal_of([](const std::string& b) { (void)parse_responses_request(b); }, bad).status, 400);
}

RunEnd end_of(const std::string& reason, int n_calls, const std::string& stop = "") {
  RunEnd e;
  e.finish_reason = reason;
  e.n_calls = n_calls;
  e.stop_sequence = stop;
  e.usage = {10, 5, 2};
  return e;
}

TEST(ServerResponses, EventsAndOutputItems) {
  ResponsesOutput o({{"id", "resp_abc"}, {"object", "response"}, {"model", "m"}});
  std::vector<json> ev = o.begin();
  ChatDelta d1;
  d1.reasoning = "hmm";
  ChatDelta d2;
  d2.reasoning = "!";
  d2.content = "Hi";
  ChatDelta d3;
  d3.content = " there";
  d3.calls.push_back({"call12345", "get_weather", R"({"city":"Rome"})"});
  for (const ChatDelta* d : {&d1, &d2, &d3})
    for (auto& e : o.delta(*d)) ev.push_back(std::move(e));
  for (auto& e : o.end(end_of("stop", 1))) ev.push_back(std::move(e));
  std::vector<std::string> types;
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i]["sequence_number"], static_cast<int64_t>(i));
    types.push_back(ev[i]["type"]);
  }
  const std::vector<std::string> want = {
      "response.created", "response.in_progress",
      "response.output_item.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
      "response.reasoning_text.done", "response.output_item.done",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta",
      "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
      "response.output_item.done", "response.completed"};
  EXPECT_EQ(types, want);
  EXPECT_EQ(ev[0]["response"]["status"], "in_progress");
  EXPECT_EQ(ev[11]["text"], "Hi there");
  const json r = o.response();
  EXPECT_EQ(r, ev.back()["response"]);
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["usage"]["input_tokens"], 10);
  EXPECT_EQ(r["usage"]["output_tokens"], 5);
  EXPECT_EQ(r["usage"]["total_tokens"], 15);
  EXPECT_EQ(r["usage"]["input_tokens_details"]["cached_tokens"], 2);
  ASSERT_EQ(r["output"].size(), 3u);
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "hmm!");
  EXPECT_EQ(r["output"][1]["type"], "message");
  EXPECT_EQ(r["output"][1]["content"][0], json({{"type", "output_text"}, {"text", "Hi there"}, {"annotations", json::array()}}));
  EXPECT_EQ(r["output"][2], json({{"id", "fc_abc_2"}, {"type", "function_call"}, {"status", "completed"},
                                  {"arguments", R"({"city":"Rome"})"}, {"call_id", "call12345"}, {"name", "get_weather"}}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r["output"][i]["status"], "completed");
  const ChatMessage turn = o.assistant_turn();
  EXPECT_EQ(turn.content, "Hi there");
  EXPECT_EQ(turn.reasoning_content.value_or(""), "hmm!");
  ASSERT_EQ(turn.tool_calls.size(), 1u);
  EXPECT_EQ(turn.tool_calls[0].id, "call12345");
  // SSE framing: an event line, then the data.
  EXPECT_EQ(sse_events({ev[0]}).rfind("event: response.created\ndata: {", 0), 0u);

  ResponsesOutput cut(json{{"id", "resp_x"}});
  ChatDelta t;
  t.content = "abc";
  (void)cut.delta(t);
  const auto last = cut.end(end_of("length", 0));
  EXPECT_EQ(last.back()["type"], "response.incomplete");
  EXPECT_EQ(cut.response()["incomplete_details"]["reason"], "max_output_tokens");
  const json err = cut.error_event(ApiError(503, "the server is shutting down", "", "shutting_down"));
  EXPECT_EQ(err["type"], "error");
  EXPECT_EQ(err["sequence_number"], last.back()["sequence_number"].get<int64_t>() + 1);
  EXPECT_EQ(err["code"], "shutting_down");
}

TEST(ServerResponses, StoreHasABoundAndAnExpiry) {
  using namespace std::chrono_literals;
  ResponseStore st(2, 60s);
  const auto t0 = ResponseStore::Clock::now();
  st.put("a", {ChatMessage("user", "1")}, t0);
  st.put("b", {ChatMessage("user", "2")}, t0 + 1s);
  ASSERT_TRUE(st.get("a", t0 + 2s));
  EXPECT_EQ(st.get("a", t0 + 2s)->at(0).content, "1");
  st.put("c", {ChatMessage("user", "3")}, t0 + 3s);  // over the bound: the oldest goes
  EXPECT_FALSE(st.get("a", t0 + 3s));
  EXPECT_TRUE(st.get("b", t0 + 3s));
  EXPECT_TRUE(st.get("c", t0 + 3s));
  EXPECT_EQ(st.size(), 2u);
  EXPECT_FALSE(st.get("b", t0 + 61s));  // expired
  EXPECT_TRUE(st.get("c", t0 + 61s));
  EXPECT_FALSE(st.get("c", t0 + 64s));
  EXPECT_EQ(st.size(), 0u);
  // The text held is bounded too: the oldest go first.
  ResponseStore small(100, 60s, 1000);
  small.put("a", {ChatMessage("user", std::string(400, 'x'))}, t0);
  small.put("b", {ChatMessage("user", std::string(400, 'y'))}, t0);
  EXPECT_TRUE(small.get("a", t0));
  EXPECT_LE(small.bytes(), 1000u);
  small.put("c", {ChatMessage("user", std::string(400, 'z'))}, t0);
  EXPECT_FALSE(small.get("a", t0));
  EXPECT_TRUE(small.get("b", t0) && small.get("c", t0));
  EXPECT_LE(small.bytes(), 1000u);
  const size_t held = small.bytes();
  small.put("big", {ChatMessage("user", std::string(2000, 'w'))}, t0);  // larger than the bound: not kept
  EXPECT_FALSE(small.get("big", t0));
  EXPECT_TRUE(small.get("c", t0));
  EXPECT_EQ(small.bytes(), held);
  ResponseStore none(0, 60s);
  none.put("a", {}, t0);
  EXPECT_FALSE(none.get("a", t0));
}

TEST(ServerMessages, BlocksBecomeChatMessages) {
  const GenRequest r = parse_messages_request(R"({
    "model": "m", "max_tokens": 20, "system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
    "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "look it up", "signature": ""},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris", "unit": "C"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "18 C"}]},
        {"type": "text", "text": "And Rome?"}]}
    ],
    "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
    "tool_choice": {"type": "any"}, "stop_sequences": ["\n\n", ""], "temperature": 0.5, "top_k": 4,
    "thinking": {"type": "enabled", "budget_tokens": 2048}, "stream": true})");
  EXPECT_EQ(r.max_tokens, 20);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n"}));
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_EQ(r.sampling.top_k, 4);
  EXPECT_TRUE(r.stream);
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "Be brief.");
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[2].reasoning_content.value_or(""), "look it up");
  EXPECT_EQ(r.messages[2].content, "Checking.");
  ASSERT_EQ(r.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[2].tool_calls[0].arguments, R"({"city":"Paris","unit":"C"})");  // the client's key order
  EXPECT_EQ(r.messages[3].role, "tool");  // the result first, then the turn's text
  EXPECT_EQ(r.messages[3].tool_call_id.value_or(""), "toolu_1");
  EXPECT_EQ(r.messages[3].name.value_or(""), "get_weather");
  EXPECT_EQ(r.messages[3].content, "18 C");
  EXPECT_EQ(r.messages[4].role, "user");
  EXPECT_EQ(r.messages[4].content, "And Rome?");
  EXPECT_EQ(r.tools_json, R"([{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"}}}])");
  EXPECT_EQ(r.tool_choice, "required");
  EXPECT_EQ(r.template_vars.at("enable_thinking"), "true");
  EXPECT_EQ(parse_messages_request(R"({"max_tokens":1,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"disabled"}})")
                .template_vars.at("enable_thinking"), "false");
  // A user turn of tool results alone has no user message.
  const GenRequest t = parse_messages_request(
      R"({"max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"ok"}]}]})");
  ASSERT_EQ(t.messages.size(), 1u);
  EXPECT_EQ(t.messages[0].role, "tool");
}

TEST(ServerMessages, RefusalsNameTheField) {
  const std::string m = R"("messages":[{"role":"user","content":"x"}])";
  const std::pair<std::string, const char*> cases[] = {
      {R"({"messages":[{"role":"user","content":"x"}]})", "max_tokens"},
      {"{\"max_tokens\":0," + m + "}", "max_tokens"},
      {"{\"max_tokens\":\"5\"," + m + "}", "max_tokens"},
      {R"({"max_tokens":5})", "messages"},
      {R"({"max_tokens":5,"messages":[]})", "messages"},
      {R"({"max_tokens":5,"messages":[{"role":"system","content":"x"}]})", "messages[0].role"},
      {R"({"max_tokens":5,"messages":[{"role":"user"}]})", "messages[0].content"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})", "messages[0].content[0].type"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]})", "messages[0].content[0].tool_use_id"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"image"}]}]}]})",
       "messages[0].content[0].content[0].type"},
      {R"({"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":"{}"}]}]})",
       "messages[0].content[0].input"},
      {R"({"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]})",
       "messages[0].content[0].id"},
      {R"({"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_result"}]}]})", "messages[0].content[0].type"},
      {"{\"max_tokens\":5,\"system\":5," + m + "}", "system"},
      {"{\"max_tokens\":5,\"tools\":[{\"name\":\"f\"}]," + m + "}", "tools[0].input_schema"},
      {"{\"max_tokens\":5,\"tools\":[{\"type\":\"bash_20250124\",\"name\":\"bash\"}]," + m + "}", "tools[0].type"},
      {"{\"max_tokens\":5,\"tools\":[{\"input_schema\":{}}]," + m + "}", "tools[0].name"},
      {"{\"max_tokens\":5,\"tool_choice\":\"auto\"," + m + "}", "tool_choice"},
      {"{\"max_tokens\":5,\"tool_choice\":{\"type\":\"any\"}," + m + "}", "tool_choice"},
      {"{\"max_tokens\":5,\"tool_choice\":{\"type\":\"maybe\"}," + m + "}", "tool_choice.type"},
      {"{\"max_tokens\":5,\"stop_sequences\":\"x\"," + m + "}", "stop_sequences"},
      {"{\"max_tokens\":5,\"stop_sequences\":[1]," + m + "}", "stop_sequences[0]"},
      {"{\"max_tokens\":5,\"temperature\":1.5," + m + "}", "temperature"},
      {"{\"max_tokens\":5,\"thinking\":{\"type\":\"on\"}," + m + "}", "thinking.type"},
      {"{\"max_tokens\":5,\"thinking\":true," + m + "}", "thinking"},
      {"{\"max_tokens\":5,\"stream\":1," + m + "}", "stream"},
  };
  for (const auto& [body, param] : cases) {
    const ApiError e = refusal_of([](const std::string& b) { (void)parse_messages_request(b); }, body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(std::string("'") + param + "'"), std::string::npos) << e.what();
  }
  const json j = anthropic_error_json(ApiError(400, "'max_tokens' is required", "max_tokens"));
  EXPECT_EQ(j, json({{"type", "error"}, {"error", {{"type", "invalid_request_error"}, {"message", "'max_tokens' is required"}}}}));
  EXPECT_EQ(anthropic_error_json(ApiError(401, "k"))["error"]["type"], "authentication_error");
  EXPECT_EQ(anthropic_error_json(ApiError(404, "k"))["error"]["type"], "not_found_error");
  EXPECT_EQ(anthropic_error_json(ApiError(503, "k"))["error"]["type"], "overloaded_error");
}

TEST(ServerMessages, EventsAndContentBlocks) {
  MessagesOutput o("msg_1", "m", 10);
  std::vector<json> ev = {o.begin()};
  ChatDelta d1;
  d1.reasoning = "hmm";
  ChatDelta d2;
  d2.content = "Hi";
  d2.calls.push_back({"call12345", "get_weather", R"({"city":"Rome"})"});
  for (const ChatDelta* d : {&d1, &d2})
    for (auto& e : o.delta(*d)) ev.push_back(std::move(e));
  for (auto& e : o.end(end_of("stop", 1))) ev.push_back(std::move(e));
  std::vector<std::string> types;
  for (const auto& e : ev) types.push_back(e["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                             "content_block_stop", "content_block_start", "content_block_delta",
                                             "content_block_stop", "content_block_start", "content_block_delta",
                                             "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(ev[0]["message"]["usage"]["input_tokens"], 10);
  EXPECT_EQ(ev[2]["delta"], json({{"type", "thinking_delta"}, {"thinking", "hmm"}}));
  EXPECT_EQ(ev[5]["delta"], json({{"type", "text_delta"}, {"text", "Hi"}}));
  EXPECT_EQ(ev[7]["index"], 2);
  EXPECT_EQ(ev[7]["content_block"]["type"], "tool_use");
  EXPECT_EQ(ev[8]["delta"], json({{"type", "input_json_delta"}, {"partial_json", R"({"city":"Rome"})"}}));
  EXPECT_EQ(ev[10]["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(ev[10]["usage"]["output_tokens"], 5);
  const json m = o.message();
  EXPECT_EQ(m["stop_reason"], "tool_use");
  ASSERT_EQ(m["content"].size(), 3u);
  EXPECT_EQ(m["content"][0], json({{"type", "thinking"}, {"thinking", "hmm"}, {"signature", ""}}));
  EXPECT_EQ(m["content"][1], json({{"type", "text"}, {"text", "Hi"}}));
  EXPECT_EQ(m["content"][2], json({{"type", "tool_use"}, {"id", "call12345"}, {"name", "get_weather"},
                                   {"input", {{"city", "Rome"}}}}));
  EXPECT_EQ(anthropic_sse({ev[0]}).rfind("event: message_start\ndata: {", 0), 0u);

  EXPECT_EQ(anthropic_stop_reason(end_of("stop", 0)), "end_turn");
  EXPECT_EQ(anthropic_stop_reason(end_of("length", 0)), "max_tokens");
  EXPECT_EQ(anthropic_stop_reason(end_of("stop", 0, "END")), "stop_sequence");
  MessagesOutput s("msg_2", "m", 3);
  (void)s.end(end_of("stop", 0, "END"));
  EXPECT_EQ(s.message()["stop_sequence"], "END");
}

TEST(ServerTextStream, SaysWhichStopStringEndedIt) {
  TextStream t({"zz", "END", "b"});
  EXPECT_EQ(t.push("aEN"), "a");
  EXPECT_EQ(t.push("Db"), "");
  EXPECT_EQ(t.matched(), "END");  // the earliest in the text, not the first listed
  TextStream u({"x"});
  (void)u.push("abc");
  (void)u.finish();
  EXPECT_EQ(u.matched(), "");
}

}  // namespace
}  // namespace nvfp4::server

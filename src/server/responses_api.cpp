// The Responses API's route and shapes (see responses_api.h).
#include "server/responses_api.h"

#include <httplib.h>

#include <chrono>
#include <random>

#include "server/api_error.h"

namespace nvfp4::server {

using nlohmann::json;

ResponsesOutput::ResponsesOutput(json head) : response_(std::move(head)) {
  const std::string id = response_.value("id", std::string());
  base_ = id.size() > 5 ? id.substr(5) : id;
  response_["status"] = "in_progress";
  response_["output"] = json::array();
  response_["usage"] = nullptr;
}

std::string ResponsesOutput::item_id(const char* prefix) { return prefix + base_ + "_" + std::to_string(n_items_); }

json ResponsesOutput::event(const char* type, json body) {
  json e = {{"type", type}, {"sequence_number", seq_++}};
  for (auto& [k, v] : body.items()) e[k] = v;
  return e;
}

std::vector<json> ResponsesOutput::begin() {
  return {event("response.created", {{"response", response_}}), event("response.in_progress", {{"response", response_}})};
}

void ResponsesOutput::close(std::vector<json>& ev) {
  if (open_ == Open::None) return;
  json& item = output_.back();
  const int idx = static_cast<int>(output_.size()) - 1;
  const std::string iid = item["id"];
  if (open_ == Open::Message) {
    const json part = {{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}};
    ev.push_back(event("response.output_text.done", {{"item_id", iid}, {"output_index", idx}, {"content_index", 0},
                                                     {"text", text_}, {"logprobs", json::array()}}));
    ev.push_back(event("response.content_part.done",
                       {{"item_id", iid}, {"output_index", idx}, {"content_index", 0}, {"part", part}}));
    item["content"] = json::array({part});
  } else {
    ev.push_back(event("response.reasoning_text.done",
                       {{"item_id", iid}, {"output_index", idx}, {"content_index", 0}, {"text", text_}}));
    item["content"] = json::array({{{"type", "reasoning_text"}, {"text", text_}}});
  }
  item["status"] = "completed";
  ev.push_back(event("response.output_item.done", {{"output_index", idx}, {"item", item}}));
  open_ = Open::None;
  text_.clear();
}

std::vector<json> ResponsesOutput::delta(const ChatDelta& d) {
  std::vector<json> ev;
  auto open = [&](Open kind) {
    if (open_ == kind) return;
    close(ev);
    open_ = kind;
    json item;
    if (kind == Open::Reasoning)
      item = {{"id", item_id("rs_")}, {"type", "reasoning"}, {"summary", json::array()}, {"content", json::array()},
              {"status", "in_progress"}};
    else
      item = {{"id", item_id("msg_")}, {"type", "message"}, {"role", "assistant"}, {"status", "in_progress"},
              {"content", json::array()}};
    ++n_items_;
    output_.push_back(item);
    const int idx = static_cast<int>(output_.size()) - 1;
    ev.push_back(event("response.output_item.added", {{"output_index", idx}, {"item", item}}));
    if (kind == Open::Message)
      ev.push_back(event("response.content_part.added",
                         {{"item_id", item["id"]}, {"output_index", idx}, {"content_index", 0},
                          {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}}));
  };
  const auto idx = [&] { return static_cast<int>(output_.size()) - 1; };
  if (!d.reasoning.empty()) {
    open(Open::Reasoning);
    text_ += d.reasoning;
    ev.push_back(event("response.reasoning_text.delta", {{"item_id", output_.back()["id"]}, {"output_index", idx()},
                                                         {"content_index", 0}, {"delta", d.reasoning}}));
  }
  if (!d.content.empty()) {
    open(Open::Message);
    text_ += d.content;
    ev.push_back(event("response.output_text.delta", {{"item_id", output_.back()["id"]}, {"output_index", idx()},
                                                      {"content_index", 0}, {"delta", d.content},
                                                      {"logprobs", json::array()}}));
  }
  for (const auto& c : d.calls) {
    close(ev);
    json item = {{"id", item_id("fc_")}, {"type", "function_call"}, {"status", "in_progress"}, {"arguments", ""},
                 {"call_id", c.id}, {"name", c.name}};
    ++n_items_;
    output_.push_back(item);
    const std::string iid = item["id"];
    ev.push_back(event("response.output_item.added", {{"output_index", idx()}, {"item", item}}));
    ev.push_back(event("response.function_call_arguments.delta",
                       {{"item_id", iid}, {"output_index", idx()}, {"delta", c.arguments}}));
    ev.push_back(event("response.function_call_arguments.done",
                       {{"item_id", iid}, {"output_index", idx()}, {"name", c.name}, {"arguments", c.arguments}}));
    output_.back()["arguments"] = c.arguments;
    output_.back()["status"] = "completed";
    ev.push_back(event("response.output_item.done", {{"output_index", idx()}, {"item", output_.back()}}));
  }
  return ev;
}

std::vector<json> ResponsesOutput::end(const RunEnd& e) {
  std::vector<json> ev;
  close(ev);
  const bool incomplete = e.finish_reason == "length";
  response_["status"] = incomplete ? "incomplete" : "completed";
  if (incomplete) response_["incomplete_details"] = {{"reason", "max_output_tokens"}};
  response_["output"] = output_;
  response_["usage"] = {{"input_tokens", e.usage.prompt_tokens},
                        {"input_tokens_details", {{"cached_tokens", e.usage.cached_tokens}}},
                        {"output_tokens", e.usage.completion_tokens},
                        {"output_tokens_details", {{"reasoning_tokens", 0}}},
                        {"total_tokens", e.usage.prompt_tokens + e.usage.completion_tokens}};
  ev.push_back(event(incomplete ? "response.incomplete" : "response.completed", {{"response", response_}}));
  return ev;
}

json ResponsesOutput::error_event(const ApiError& e) {
  return event("error", {{"code", e.code.empty() ? json(nullptr) : json(e.code)},
                         {"message", message_text(e)},
                         {"param", e.param.empty() ? json(nullptr) : json(e.param)}});
}

ChatMessage ResponsesOutput::assistant_turn() const {
  ChatMessage m("assistant", "");
  for (const json& item : output_) {
    const std::string type = item["type"];
    if (type == "reasoning") {
      for (const json& p : item["content"]) m.reasoning_content = m.reasoning_content.value_or("") + p["text"].get<std::string>();
    } else if (type == "message") {
      for (const json& p : item["content"]) m.content += p["text"].get<std::string>();
    } else if (type == "function_call") {
      m.tool_calls.push_back({item["call_id"], item["name"], item["arguments"]});
    }
  }
  return m;
}

std::string sse_events(const std::vector<json>& events) {
  std::string out;
  for (const json& e : events) out += "event: " + e["type"].get<std::string>() + "\n" + sse(e);
  return out;
}

namespace {

class ResponsesEvents : public ChatEvents {
 public:
  ResponsesEvents(std::shared_ptr<ResponsesOutput> out, ResponseStore* store, std::vector<ChatMessage> convo)
      : out_(std::move(out)), store_(store), convo_(std::move(convo)) {}
  std::string begin() override { return sse_events(out_->begin()); }
  std::string delta(const ChatDelta& d) override { return sse_events(out_->delta(d)); }
  std::string end(const RunEnd& e) override {
    std::string s = sse_events(out_->end(e));
    if (store_) {
      convo_.push_back(out_->assistant_turn());
      store_->put(out_->response()["id"], std::move(convo_));
    }
    return s;
  }
  std::string error(const ApiError& e) override { return sse_events({out_->error_event(e)}); }

 private:
  std::shared_ptr<ResponsesOutput> out_;
  ResponseStore* store_;
  std::vector<ChatMessage> convo_;
};

std::string hex_id(uint64_t id) {
  std::mt19937_64 rng((uint64_t{std::random_device{}()} << 32) ^ std::random_device{}() ^ id);
  char buf[40];
  snprintf(buf, sizeof buf, "%016llx%08llx", static_cast<unsigned long long>(rng()),
           static_cast<unsigned long long>(id & 0xffffffffu));
  return buf;
}

}  // namespace

void handle_responses(const Backend& b, ResponseStore& store, const httplib::Request& req, const std::string& body,
                      httplib::Response& res, uint64_t id, std::shared_ptr<void> guard) {
  ResponsesRequest r = parse_responses_request(body);
  std::vector<ChatMessage> history;
  if (!r.previous_response_id.empty()) {
    auto h = store.get(r.previous_response_id);
    if (!h)
      throw ApiError(404, "previous response '" + shown(r.previous_response_id) +
                              "' is not stored (unknown, expired or evicted)", "previous_response_id",
                     "previous_response_not_found");
    history = std::move(*h);
  }
  r.gen.messages = responses_messages(r, history);
  if (r.gen.messages.empty()) throw ApiError(400, "'input' holds no items", "input", "invalid_value");
  // What is stored: the conversation without the instructions.
  std::vector<ChatMessage> convo = history;
  convo.insert(convo.end(), r.input.begin(), r.input.end());

  GenRun run = start_run(b, r.gen, id);
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch()).count();
  json head = {{"id", "resp_" + hex_id(id)},
               {"object", "response"},
               {"created_at", created},
               {"error", nullptr},
               {"incomplete_details", nullptr},
               {"instructions", r.has_instructions ? json(r.instructions) : json(nullptr)},
               {"max_output_tokens", r.max_output_tokens ? json(*r.max_output_tokens) : json(nullptr)},
               {"model", b.model_name},
               {"parallel_tool_calls", true},
               {"previous_response_id", r.previous_response_id.empty() ? json(nullptr) : json(r.previous_response_id)},
               {"reasoning", json::parse(dump_ordered(r.reasoning))},
               {"store", r.store},
               {"temperature", r.gen.sampling.temperature},
               {"text", {{"format", {{"type", "text"}}}}},
               {"tool_choice", json::parse(dump_ordered(r.tool_choice))},
               {"tools", json::parse(dump_ordered(r.tools))},
               {"top_p", r.gen.sampling.top_p},
               {"truncation", "disabled"},
               {"metadata", json::object()}};
  auto out = std::make_shared<ResponsesOutput>(std::move(head));
  auto ev = std::make_shared<ResponsesEvents>(out, r.store ? &store : nullptr, std::move(convo));
  if (r.gen.stream) return stream_run(std::move(run), req, res, ev, std::move(guard));
  const JobUpdate u = wait_whole(*run.job, req);
  (void)out->begin();
  (void)out->delta(parse_whole(run, u.text));
  (void)ev->end(run_end(run, u));
  res.set_content(dump(out->response()), "application/json");
}

}  // namespace nvfp4::server

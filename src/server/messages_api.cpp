// Anthropic's Messages route and shapes (see messages_api.h).
#include "server/messages_api.h"

#include <httplib.h>

#include <random>

#include "server/json_fields.h"
#include "server/messages_request.h"
#include "server/openai_json.h"

namespace nvfp4::server {

using nlohmann::json;

std::string anthropic_stop_reason(const RunEnd& e) {
  if (e.finish_reason == "length") return "max_tokens";
  if (e.n_calls > 0) return "tool_use";
  if (!e.stop_sequence.empty()) return "stop_sequence";
  return "end_turn";
}

MessagesOutput::MessagesOutput(std::string id, std::string model, int64_t n_prompt) {
  message_ = {{"id", std::move(id)}, {"type", "message"}, {"role", "assistant"}, {"model", std::move(model)},
              {"content", json::array()}, {"stop_reason", nullptr}, {"stop_sequence", nullptr},
              {"usage", {{"input_tokens", n_prompt}, {"output_tokens", 0}}}};
}

json MessagesOutput::begin() { return {{"type", "message_start"}, {"message", message_}}; }

void MessagesOutput::close(std::vector<json>& ev) {
  if (open_ == Open::None) return;
  ev.push_back({{"type", "content_block_stop"}, {"index", message_["content"].size() - 1}});
  open_ = Open::None;
}

std::vector<json> MessagesOutput::delta(const ChatDelta& d) {
  std::vector<json> ev;
  json& blocks = message_["content"];
  auto open = [&](Open kind) {
    if (open_ == kind) return;
    close(ev);
    open_ = kind;
    json block = kind == Open::Thinking ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                                        : json{{"type", "text"}, {"text", ""}};
    blocks.push_back(block);
    ev.push_back({{"type", "content_block_start"}, {"index", blocks.size() - 1}, {"content_block", block}});
  };
  if (!d.reasoning.empty()) {
    open(Open::Thinking);
    blocks.back()["thinking"] = blocks.back()["thinking"].get<std::string>() + d.reasoning;
    ev.push_back({{"type", "content_block_delta"}, {"index", blocks.size() - 1},
                  {"delta", {{"type", "thinking_delta"}, {"thinking", d.reasoning}}}});
  }
  if (!d.content.empty()) {
    open(Open::Text);
    blocks.back()["text"] = blocks.back()["text"].get<std::string>() + d.content;
    ev.push_back({{"type", "content_block_delta"}, {"index", blocks.size() - 1},
                  {"delta", {{"type", "text_delta"}, {"text", d.content}}}});
  }
  for (const auto& c : d.calls) {
    close(ev);
    json input = json::parse(c.arguments, nullptr, false);
    if (input.is_discarded() || !input.is_object()) input = json::object();  // (the parser gives objects only)
    blocks.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", input}});
    const size_t i = blocks.size() - 1;
    ev.push_back({{"type", "content_block_start"}, {"index", i},
                  {"content_block", {{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", json::object()}}}});
    ev.push_back({{"type", "content_block_delta"}, {"index", i},
                  {"delta", {{"type", "input_json_delta"}, {"partial_json", c.arguments}}}});
    ev.push_back({{"type", "content_block_stop"}, {"index", i}});
  }
  return ev;
}

std::vector<json> MessagesOutput::end(const RunEnd& e) {
  std::vector<json> ev;
  close(ev);
  const std::string reason = anthropic_stop_reason(e);
  message_["stop_reason"] = reason;
  message_["stop_sequence"] = reason == "stop_sequence" ? json(e.stop_sequence) : json(nullptr);
  message_["usage"] = {{"input_tokens", e.usage.prompt_tokens}, {"output_tokens", e.usage.completion_tokens}};
  ev.push_back({{"type", "message_delta"},
                {"delta", {{"stop_reason", reason}, {"stop_sequence", message_["stop_sequence"]}}},
                {"usage", {{"output_tokens", e.usage.completion_tokens}}}});
  ev.push_back({{"type", "message_stop"}});
  return ev;
}

std::string anthropic_sse(const std::vector<json>& events) {
  std::string out;
  for (const json& e : events) out += "event: " + e["type"].get<std::string>() + "\n" + sse(e);
  return out;
}

json anthropic_error_json(const ApiError& e) {
  const char* type = e.status == 400   ? "invalid_request_error"
                     : e.status == 401 ? "authentication_error"
                     : e.status == 403 ? "permission_error"
                     : e.status == 404 ? "not_found_error"
                     : e.status == 413 ? "request_too_large"
                     : e.status == 429 ? "rate_limit_error"
                     : e.status == 503 ? "overloaded_error"
                     : e.status >= 500 ? "api_error"
                                       : "invalid_request_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", message_text(e)}}}};
}

namespace {

class MessagesEvents : public ChatEvents {
 public:
  explicit MessagesEvents(std::shared_ptr<MessagesOutput> out) : out_(std::move(out)) {}
  std::string begin() override { return anthropic_sse({out_->begin()}); }
  std::string delta(const ChatDelta& d) override { return anthropic_sse(out_->delta(d)); }
  std::string end(const RunEnd& e) override { return anthropic_sse(out_->end(e)); }
  std::string error(const ApiError& e) override { return anthropic_sse({anthropic_error_json(e)}); }

 private:
  std::shared_ptr<MessagesOutput> out_;
};

std::string message_id(uint64_t id) {
  std::mt19937_64 rng((uint64_t{std::random_device{}()} << 32) ^ std::random_device{}() ^ id);
  static const char kAlnum[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string s = "msg_";
  for (int i = 0; i < 24; ++i) s += kAlnum[rng() % 62];
  return s;
}

}  // namespace

void handle_messages(const Backend& b, const httplib::Request& req, const std::string& body, httplib::Response& res,
                     uint64_t id, std::shared_ptr<void> guard) {
  GenRequest r = parse_messages_request(body);
  GenRun run = start_run(b, r, id);
  auto out = std::make_shared<MessagesOutput>(message_id(id), b.model_name, run.n_prompt);
  if (r.stream) return stream_run(std::move(run), req, res, std::make_shared<MessagesEvents>(out), std::move(guard));
  const JobUpdate u = wait_whole(*run.job, req);
  (void)out->delta(parse_whole(run, u.text));
  (void)out->end(run_end(run, u));
  res.set_content(dump(out->message()), "application/json");
}

void handle_count_tokens(const Backend& b, const std::string& body, httplib::Response& res) {
  // max_tokens is not part of a count_tokens body: one is supplied when absent.
  OJson j = parse_body_object(body);
  if (!j.contains("max_tokens") || j["max_tokens"].is_null()) j["max_tokens"] = 1;
  GenRequest r = parse_messages_request(dump_ordered(j));
  const std::string text = render_chat(b, r, "messages");
  res.set_content(dump({{"input_tokens", b.tok->encode(text, true).size()}}), "application/json");
}

}  // namespace nvfp4::server

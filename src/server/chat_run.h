// One generation request from its parsed GenRequest to its end, shared by the routes that answer
// chat (/v1/chat/completions, /v1/responses, /v1/messages) and completions: the prompt rendered
// and tokenized, the context checked, the Job queued; the whole reply waited for, or streamed
// through a route's own event shapes (ChatEvents) with the reply's reasoning and tool calls split
// off by the same ChatOutputParser.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "server/http_server.h"
#include "server/job.h"
#include "server/openai_json.h"
#include "server/request.h"
#include "server/tool_calls.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace nvfp4::server {

// A queued job. `prompt_text` is the rendered chat prompt (empty for completions).
struct GenRun {
  std::shared_ptr<Job> job;
  std::optional<ChatOutputParser> parser;  // chat: reasoning and tool calls
  int64_t n_prompt = 0;
  std::string prompt_text;
};

// The chat prompt of r (messages, tools unless tool_choice is "none", template variables) as the
// checkpoint's template renders it; ApiError 400 naming `field` when the template refuses it.
std::string render_chat(const Backend& b, const GenRequest& r, const std::string& field);

// Renders and tokenizes r's prompt, checks it and max_tokens against the context (r.max_tokens
// is set when it was -1), fills the Job and submits it. Throws ApiError naming r's fields
// (r.prompt_field, r.max_tokens_field).
GenRun start_run(const Backend& b, GenRequest& r, uint64_t id);

// Waits for the end of a job, accumulating its updates (text, tokens, logprobs; the last one's
// counts and reason). A client that leaves meanwhile cancels it: ApiError 499. The job's own
// error is thrown.
JobUpdate wait_whole(Job& job, const httplib::Request& req);

// The whole chat reply of a run: its text through the parser.
ChatDelta parse_whole(GenRun& run, const std::string& text);

// A chat reply's end as the routes report it.
struct RunEnd {
  std::string finish_reason;  // the scheduler's: "stop" or "length"
  std::string stop_sequence;  // the stop string that ended it, if one did
  int n_calls = 0;            // tool calls parsed
  Usage usage;
};
RunEnd run_end(const GenRun& run, const JobUpdate& last);

// A route's stream: the text of each event (already framed as server-sent events).
class ChatEvents {
 public:
  virtual ~ChatEvents() = default;
  virtual std::string begin() = 0;                      // before any text
  virtual std::string delta(const ChatDelta& d) = 0;    // "" when nothing is to be said
  virtual std::string end(const RunEnd& e) = 0;         // after the last delta
  virtual std::string error(const ApiError& e) = 0;     // the job failed
};

// Streams a chat run (its parser set) as `ev` says; `guard` is held until the stream has ended.
void stream_run(GenRun run, const httplib::Request& req, httplib::Response& res, std::shared_ptr<ChatEvents> ev,
                std::shared_ptr<void> guard);

}  // namespace nvfp4::server

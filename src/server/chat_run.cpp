// A generation from GenRequest to its end (see chat_run.h).
#include "server/chat_run.h"

#include <httplib.h>

#include <chrono>
#include <random>

#include "nvfp4/error.h"
#include "server/half_close.h"
#include "server/output_grammar.h"
#include "server/peer.h"

namespace nvfp4::server {
namespace {

using namespace std::chrono_literals;

// Chat: the prompt text rendered (for the output parser); completions: untouched.
std::vector<int32_t> prompt_tokens(const Backend& b, const GenRequest& r, const std::string& field, std::string& text) {
  const Tokenizer& tok = *b.tok;
  std::vector<int32_t> ids;
  if (r.chat) {
    text = render_chat(b, r, field);
    ids = tok.encode(text, true);
  } else if (r.prompt_is_ids) {
    for (int32_t id : r.prompt_ids)
      if (id >= tok.n_vocab())
        throw ApiError(400, "'prompt' token id " + std::to_string(id) + " is outside the vocabulary (" +
                                std::to_string(tok.n_vocab()) + " tokens)", "prompt", "invalid_value");
    ids = r.prompt_ids;
  } else {
    if (tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
    for (int32_t id : tok.encode(r.prompt, true)) ids.push_back(id);
  }
  if (ids.empty()) throw ApiError(400, "the prompt has no tokens", field, "invalid_value");
  return ids;
}

}  // namespace

std::string render_chat(const Backend& b, const GenRequest& r, const std::string& field) {
  if (!b.chat) throw ApiError(400, "this model has no usable chat template (" + b.chat_error + "); use /v1/completions",
                              field, "no_chat_template");
  ChatRenderOptions o = b.chat_opts;
  // tool_choice "none": the model is not offered the tools (and no call is parsed).
  if (r.tool_choice != "none") o.tools_json = r.tools_json;
  for (const auto& [k, v] : r.template_vars) o.json_vars[k] = v;
  try {
    return b.chat->render(r.messages, o);
  } catch (const Error& e) {
    throw ApiError(400, std::string("the chat template refused the messages: ") + e.what(), field);
  }
}

GenRun start_run(const Backend& b, GenRequest& r, uint64_t id) {
  GenRun run;
  run.job = std::make_shared<Job>();
  Job& job = *run.job;
  const std::string field = !r.prompt_field.empty() ? r.prompt_field : r.chat ? "messages" : "prompt";
  job.prompt = prompt_tokens(b, r, field, run.prompt_text);
  std::string reasoning_close;  // the prompt left a reasoning block open: what closes it
  if (r.chat) {
    const ChatParseOptions po =
        chat_parse_options(b.chat->text(), r.tool_choice == "none" ? std::string() : r.tools_json, run.prompt_text);
    if (po.in_reasoning) reasoning_close = po.think_close;
    run.parser.emplace(po, (uint64_t{std::random_device{}()} << 32) ^ id);
  }
  run.n_prompt = static_cast<int64_t>(job.prompt.size());
  if (run.n_prompt >= b.n_ctx) {  // the prompt alone leaves no room for one token, whatever max_tokens says
    throw ApiError(400, "this model's context is " + std::to_string(b.n_ctx) + " tokens; the prompt ('" + field +
                            "') alone has " + std::to_string(run.n_prompt) + ", leaving none to generate",
                   field, "context_length_exceeded");
  }
  if (r.max_tokens < 0) {
    r.max_tokens = b.n_ctx - run.n_prompt;
  } else if (r.max_tokens > b.n_ctx - run.n_prompt) {  // (no overflow for any max_tokens)
    throw ApiError(400, "this model's context is " + std::to_string(b.n_ctx) + " tokens; the request asks for " +
                            std::to_string(run.n_prompt) + " in the prompt + " + std::to_string(r.max_tokens) + " in " +
                            r.max_tokens_field + " (at most " + std::to_string(b.n_ctx - run.n_prompt) + " fit)",
                   r.max_tokens_field, "context_length_exceeded");
  }
  job.max_tokens = r.max_tokens;
  job.sampling = r.sampling;
  if (!r.seed_set) job.sampling.seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  job.stop = r.stop;
  job.cache_prompt = r.cache_prompt;
  job.top_logprobs = r.top_logprobs;
  std::shared_ptr<const GrammarSpec> spec = r.grammar;
  // tool_choice "required" or a named function: the reply is one call, in the template's format.
  if (r.chat && (r.tool_choice == "required" || r.tool_choice == "function") && !r.tools_json.empty())
    if (auto g = tool_call_grammar(tool_format_of(b.chat->text()), r.tools_json, r.tool_choice_name, reasoning_close)) spec = g;
  if (spec) job.grammar = b.grammars->compile(*spec);
  b.sched->submit(run.job);
  return run;
}

JobUpdate wait_whole(Job& job, const httplib::Request& req) {
  // The client may leave while it waits: the job is cancelled (its slot freed at the next step).
  PeerWatch peer(req);
  JobUpdate all;
  for (;;) {
    JobUpdate u = take(job, 50ms);
    all.text += u.text;
    all.tokens.insert(all.tokens.end(), u.tokens.begin(), u.tokens.end());
    for (auto& l : u.logprobs) all.logprobs.push_back(std::move(l));
    if (u.done) {
      if (u.error) throw *u.error;
      u.text = std::move(all.text);
      u.tokens = std::move(all.tokens);
      u.logprobs = std::move(all.logprobs);
      return u;
    }
    // End of stream: the client half-closed (still reading) or closed. An interim response
    // (HTTP/1.1 clients accept 1xx before the final one) tells which: a closed socket resets.
    if (peer.eof() && !peer.probed()) {
      if (req.version != "HTTP/1.1" || !peer.probe("HTTP/1.1 100 Continue\r\n\r\n")) {
        job.cancelled = true;
        throw ApiError(499, "the client closed the connection", "", "client_closed");
      }
    }
    if (peer.gone()) {
      job.cancelled = true;
      throw ApiError(499, "the client closed the connection", "", "client_closed");
    }
  }
}

static void append(ChatDelta& a, ChatDelta&& b) {
  a.reasoning += b.reasoning;
  a.content += b.content;
  for (auto& c : b.calls) a.calls.push_back(std::move(c));
}

ChatDelta parse_whole(GenRun& run, const std::string& text) {
  ChatDelta whole = run.parser->push(text);
  append(whole, run.parser->finish());
  return whole;
}

RunEnd run_end(const GenRun& run, const JobUpdate& last) {
  RunEnd e;
  e.finish_reason = last.finish_reason;
  e.stop_sequence = last.stop_sequence;
  e.n_calls = run.parser ? run.parser->n_calls() : 0;
  e.usage = {run.n_prompt, last.n_generated, last.n_cached};
  return e;
}

namespace {
struct RunStream {
  GenRun run;
  std::shared_ptr<ChatEvents> ev;
  std::shared_ptr<StreamOut> out;  // the events, on past a half-close
  bool begun = false, finished = false;
  std::shared_ptr<void> guard;
  explicit RunStream(const httplib::Request& req) : out(std::make_shared<StreamOut>(req)) {}
};

}  // namespace

void stream_run(GenRun run, const httplib::Request& req, httplib::Response& res, std::shared_ptr<ChatEvents> ev,
                std::shared_ptr<void> guard) {
  auto st = std::make_shared<RunStream>(req);
  st->run = std::move(run);
  st->ev = std::move(ev);
  st->guard = std::move(guard);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      stream_provider(st->out, [st](httplib::DataSink& sink) {
        if (st->finished) {
          st->out->done(sink);
          return true;
        }
        if (!st->begun) {
          st->begun = true;
          return st->out->write(sink, st->ev->begin());
        }
        JobUpdate u = take(*st->run.job, 50ms);
        ChatDelta d = st->run.parser->push(u.text);
        if (u.done && !u.error) append(d, st->run.parser->finish());
        bool ok = true;
        const std::string out = d.empty() ? std::string() : st->ev->delta(d);
        if (!out.empty()) {
          ok = st->out->write(sink, out);
        } else if (!u.done && st->out->peer().gone()) {
          return false;  // the client left while nothing was written
        } else if (!u.done && !st->out->peer().probed() && st->out->peer().eof()) {
          // Half-closed or closed: an SSE comment (ignored by clients) tells which (a reset follows).
          ok = st->out->write(sink, ": probe\n\n");
          (void)st->out->peer().probe("");
        }
        if (ok && u.done) {
          ok = st->out->write(sink, u.error ? st->ev->error(*u.error) : st->ev->end(run_end(st->run, u)));
          st->finished = true;
          if (ok) st->out->done(sink);
        }
        return ok;
      }),
      // However the stream ends (done, client gone, server stopping), the slot is freed.
      [st](bool) { st->run.job->cancelled = true; });
}

}  // namespace nvfp4::server

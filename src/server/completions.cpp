#include "server/completions.h"

#include <httplib.h>

#include <chrono>
#include <optional>
#include <random>

#include "nvfp4/error.h"
#include "server/chat_output.h"
#include "server/chat_run.h"
#include "server/half_close.h"
#include "server/logprobs.h"
#include "server/openai_json.h"
#include "server/request.h"

namespace nvfp4::server {
namespace {

using namespace std::chrono_literals;

struct Stream {
  std::shared_ptr<Job> job;
  ResponseIds ids;
  const Tokenizer* tok = nullptr;
  std::shared_ptr<StreamOut> out;  // the events, on past a half-close
  int64_t n_prompt = 0;
  bool include_usage = false, return_tokens = false, logprobs = false;
  bool first = true, finished = false, speculative = false;
  int64_t text_offset = 0;  // completions' logprobs.text_offset
  std::optional<ChatOutputParser> parser;  // chat: reasoning and tool calls split off
  std::shared_ptr<void> guard;
  explicit Stream(const httplib::Request& req) : out(std::make_shared<StreamOut>(req)) {}
};

// The choice's logprobs of these tokens, or null when not asked for.
nlohmann::json logprobs_of(bool asked, bool chat, const std::vector<TokenLogprob>& lp, const Tokenizer& tok,
                           int64_t& offset) {
  if (!asked) return nullptr;
  return chat ? chat_logprobs_json(lp, tok) : completion_logprobs_json(lp, tok, offset);
}

// llama-server's per-response speculation counts (its `timings` object's draft fields).
void add_timings(nlohmann::json& j, bool speculative, const JobUpdate& u) {
  if (speculative) j["timings"] = {{"draft_n", u.n_drafted}, {"draft_n_accepted", u.n_accepted}};
}

void append(ChatDelta& a, ChatDelta&& b) {
  a.reasoning += b.reasoning;
  a.content += b.content;
  for (auto& c : b.calls) a.calls.push_back(std::move(c));
}

}  // namespace

void handle_generation(const Backend& b, const httplib::Request& req, const std::string& body, httplib::Response& res,
                       bool chat, uint64_t id, std::shared_ptr<void> guard) {
  GenRequest r = parse_gen_request(body, chat);
  GenRun run = start_run(b, r, id);
  std::shared_ptr<Job> job = run.job;
  std::optional<ChatOutputParser> parser = std::move(run.parser);
  const int64_t n_prompt = run.n_prompt;
  const bool want_lp = r.top_logprobs >= 0;

  ResponseIds ids;
  ids.chat = chat;
  ids.id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(id);
  ids.model = b.model_name;
  ids.created = static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch()).count());
  if (!r.stream) {
    JobUpdate u = wait_whole(*job, req);
    {
      const std::string& text = u.text;
      const std::vector<int32_t>& toks = u.tokens;
      const std::vector<TokenLogprob>& lps = u.logprobs;
      int64_t offset = 0;
      std::string finish = u.finish_reason;
      ChatDelta whole;
      if (parser) {
        whole = parser->push(text);
        append(whole, parser->finish());
        finish = chat_finish_reason(finish, parser->n_calls());
      }
      nlohmann::json out = completion_json(ids, text, finish, {n_prompt, u.n_generated, u.n_cached},
                                           r.return_tokens ? &toks : nullptr, logprobs_of(want_lp, chat, lps, *b.tok, offset));
      if (parser) out["choices"][0]["message"] = chat_message_json(whole);
      add_timings(out, b.speculative, u);
      res.set_content(dump(out), "application/json");
      return;
    }
  }

  auto st = std::make_shared<Stream>(req);
  st->job = job;
  st->tok = b.tok;
  st->logprobs = want_lp;
  st->ids = ids;
  st->n_prompt = n_prompt;
  st->include_usage = r.include_usage;
  st->return_tokens = r.return_tokens;
  st->guard = std::move(guard);
  st->speculative = b.speculative;
  st->parser = std::move(parser);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      stream_provider(st->out, [st](httplib::DataSink& sink) {
        if (st->finished) {
          st->out->done(sink);
          return true;
        }
        if (st->first && st->ids.chat) {
          st->first = false;
          return st->out->write(sink, sse(chunk_json(st->ids, "", nullptr, true, st->include_usage, nullptr, nullptr)));
        }
        JobUpdate u = take(*st->job, 50ms);
        bool ok = true;
        if (st->parser) {
          // Chat: the text through the parser (reasoning, tool calls, content held back while it
          // may begin a marker); a chunk when there is something to say
          const int first_index = st->parser->n_calls();
          ChatDelta d = st->parser->push(u.text);
          if (u.done && !u.error) append(d, st->parser->finish());
          // (a token whose text is held back still sends its id or logprobs when asked for)
          if (!d.empty() || (st->return_tokens && !u.tokens.empty()) || (st->logprobs && !u.logprobs.empty())) {
            ok = st->out->write(sink, sse(chat_delta_chunk(st->ids, d, first_index, st->first, st->include_usage,
                                                           st->return_tokens ? &u.tokens : nullptr,
                                                           logprobs_of(st->logprobs, true, u.logprobs, *st->tok,
                                                                       st->text_offset))));
            st->first = false;
          } else if (!u.done && st->out->peer().gone()) {
            return false;
          }
        } else if (!u.text.empty() || !u.tokens.empty()) {
          ok = st->out->write(sink, sse(chunk_json(st->ids, u.text, nullptr, st->first, st->include_usage,
                                                   st->return_tokens ? &u.tokens : nullptr,
                                                   logprobs_of(st->logprobs, st->ids.chat, u.logprobs, *st->tok,
                                                               st->text_offset))));
          st->first = false;
        } else if (!u.done && st->out->peer().gone()) {
          return false;  // the client left while nothing was written: noticed now, not at the next write
        } else if (!u.done && !st->out->peer().probed() && st->out->peer().eof()) {
          // Half-closed or closed: an SSE comment (ignored by clients) tells which (a reset follows).
          ok = st->out->write(sink, ": probe\n\n");
          (void)st->out->peer().probe("");
        }
        if (ok && u.done) {
          if (u.error) {
            ok = st->out->write(sink, sse(error_json(*u.error)));
          } else {
            const std::string finish =
                st->parser ? chat_finish_reason(u.finish_reason, st->parser->n_calls()) : u.finish_reason;
            nlohmann::json last = chunk_json(st->ids, "", &finish, st->first, st->include_usage, nullptr, nullptr);
            add_timings(last, st->speculative, u);
            ok = st->out->write(sink, sse(last));
            if (ok && st->include_usage)
              ok = st->out->write(sink, sse(usage_chunk_json(st->ids, {st->n_prompt, u.n_generated, u.n_cached})));
          }
          if (ok) ok = st->out->write(sink, "data: [DONE]\n\n");
          st->finished = true;
          if (ok) st->out->done(sink);
        }
        return ok;
      }),
      // However the stream ends (done, client gone, server stopping), the slot is freed.
      [st](bool) { st->job->cancelled = true; });
}

}  // namespace nvfp4::server

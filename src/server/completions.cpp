#include "server/completions.h"

#include <httplib.h>

#include <chrono>
#include <optional>
#include <random>

#include "nvfp4/error.h"
#include "server/chat_output.h"
#include "server/logprobs.h"
#include "server/openai_json.h"
#include "server/peer.h"
#include "server/request.h"

namespace nvfp4::server {
namespace {

using namespace std::chrono_literals;

// Chat: the prompt text rendered (for the output parser); completions: untouched.
std::vector<int32_t> prompt_tokens(const Backend& b, const GenRequest& r, std::string& text) {
  const Tokenizer& tok = *b.tok;
  std::vector<int32_t> ids;
  if (r.chat) {
    if (!b.chat) throw ApiError(400, "this model has no usable chat template (" + b.chat_error + "); use /v1/completions",
                                "messages", "no_chat_template");
    ChatRenderOptions o = b.chat_opts;
    // tool_choice "none": the model is not offered the tools (and no call is parsed).
    if (r.tool_choice != "none") o.tools_json = r.tools_json;
    for (const auto& [k, v] : r.template_vars) o.json_vars[k] = v;
    try {
      text = b.chat->render(r.messages, o);
    } catch (const Error& e) {
      throw ApiError(400, std::string("the chat template refused the messages: ") + e.what(), "messages");
    }
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
  if (ids.empty()) throw ApiError(400, "the prompt has no tokens", r.chat ? "messages" : "prompt", "invalid_value");
  return ids;
}

struct Stream {
  std::shared_ptr<Job> job;
  ResponseIds ids;
  const Tokenizer* tok = nullptr;
  PeerWatch peer;
  int64_t n_prompt = 0;
  bool include_usage = false, return_tokens = false, logprobs = false;
  bool first = true, finished = false, speculative = false;
  int64_t text_offset = 0;  // completions' logprobs.text_offset
  std::optional<ChatOutputParser> parser;  // chat: reasoning and tool calls split off
  std::shared_ptr<void> guard;
  explicit Stream(const httplib::Request& req) : peer(req) {}
};

// The choice's logprobs of these tokens, or null when not asked for.
nlohmann::json logprobs_of(bool asked, bool chat, const std::vector<TokenLogprob>& lp, const Tokenizer& tok,
                           int64_t& offset) {
  if (!asked) return nullptr;
  return chat ? chat_logprobs_json(lp, tok) : completion_logprobs_json(lp, tok, offset);
}

bool write(httplib::DataSink& sink, const std::string& s) { return sink.write(s.data(), s.size()); }

// llama-server's per-response speculation counts (its `timings` object's draft fields).
void add_timings(nlohmann::json& j, bool speculative, const JobUpdate& u) {
  if (speculative) j["timings"] = {{"draft_n", u.n_drafted}, {"draft_n_accepted", u.n_accepted}};
}

ChatParseOptions parse_options(const Backend& b, const GenRequest& r, const std::string& prompt) {
  return chat_parse_options(b.chat->text(), r.tool_choice == "none" ? std::string() : r.tools_json, prompt);
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
  auto job = std::make_shared<Job>();
  std::string prompt_text;
  job->prompt = prompt_tokens(b, r, prompt_text);
  std::optional<ChatOutputParser> parser;
  if (chat) parser.emplace(parse_options(b, r, prompt_text), (uint64_t{std::random_device{}()} << 32) ^ id);
  const int64_t n_prompt = static_cast<int64_t>(job->prompt.size());
  const std::string prompt_field = chat ? "messages" : "prompt";
  if (n_prompt >= b.n_ctx) {  // the prompt alone leaves no room for one token, whatever max_tokens says
    throw ApiError(400, "this model's context is " + std::to_string(b.n_ctx) + " tokens; the prompt ('" + prompt_field +
                            "') alone has " + std::to_string(n_prompt) + ", leaving none to generate",
                   prompt_field, "context_length_exceeded");
  }
  if (r.max_tokens < 0) {
    r.max_tokens = b.n_ctx - n_prompt;
  } else if (r.max_tokens > b.n_ctx - n_prompt) {  // (no overflow for any max_tokens)
    throw ApiError(400, "this model's context is " + std::to_string(b.n_ctx) + " tokens; the request asks for " +
                            std::to_string(n_prompt) + " in the prompt + " + std::to_string(r.max_tokens) + " in " +
                            r.max_tokens_field + " (at most " + std::to_string(b.n_ctx - n_prompt) + " fit)",
                   r.max_tokens_field, "context_length_exceeded");
  }
  job->max_tokens = r.max_tokens;
  job->sampling = r.sampling;
  if (!r.seed_set) job->sampling.seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  job->stop = r.stop;
  job->cache_prompt = r.cache_prompt;
  job->top_logprobs = r.top_logprobs;
  const bool want_lp = r.top_logprobs >= 0;

  ResponseIds ids;
  ids.chat = chat;
  ids.id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(id);
  ids.model = b.model_name;
  ids.created = static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch()).count());
  b.sched->submit(job);

  if (!r.stream) {
    // The client may leave while it waits: the job is cancelled (its slot freed at the next step).
    PeerWatch peer(req);
    std::string text;
    std::vector<int32_t> toks;
    std::vector<TokenLogprob> lps;
    for (;;) {
      JobUpdate u = take(*job, 50ms);
      text += u.text;
      toks.insert(toks.end(), u.tokens.begin(), u.tokens.end());
      for (auto& l : u.logprobs) lps.push_back(std::move(l));
      if (!u.done) {
        // End of stream: the client half-closed (still reading) or closed. An interim response
        // (HTTP/1.1 clients accept 1xx before the final one) tells which: a closed socket resets.
        if (peer.eof() && !peer.probed()) {
          if (req.version != "HTTP/1.1" || !peer.probe("HTTP/1.1 100 Continue\r\n\r\n")) {
            job->cancelled = true;
            throw ApiError(499, "the client closed the connection", "", "client_closed");
          }
        }
        if (peer.gone()) {
          job->cancelled = true;
          throw ApiError(499, "the client closed the connection", "", "client_closed");
        }
        continue;
      }
      if (u.error) throw *u.error;
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
      [st](size_t, httplib::DataSink& sink) {
        if (st->finished) {
          sink.done();
          return true;
        }
        if (st->first && st->ids.chat) {
          st->first = false;
          return write(sink, sse(chunk_json(st->ids, "", nullptr, true, st->include_usage, nullptr, nullptr)));
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
            ok = write(sink, sse(chat_delta_chunk(st->ids, d, first_index, st->first, st->include_usage,
                                                  st->return_tokens ? &u.tokens : nullptr,
                                                  logprobs_of(st->logprobs, true, u.logprobs, *st->tok, st->text_offset))));
            st->first = false;
          } else if (!u.done && st->peer.gone()) {
            return false;
          }
        } else if (!u.text.empty() || !u.tokens.empty()) {
          ok = write(sink, sse(chunk_json(st->ids, u.text, nullptr, st->first, st->include_usage,
                                          st->return_tokens ? &u.tokens : nullptr,
                                          logprobs_of(st->logprobs, st->ids.chat, u.logprobs, *st->tok,
                                                      st->text_offset))));
          st->first = false;
        } else if (!u.done && st->peer.gone()) {
          return false;  // the client left while nothing was written: noticed now, not at the next write
        } else if (!u.done && !st->peer.probed() && st->peer.eof()) {
          // Half-closed or closed: an SSE comment (ignored by clients) tells which (a reset follows).
          ok = write(sink, ": probe\n\n");
          (void)st->peer.probe("");
        }
        if (ok && u.done) {
          if (u.error) {
            ok = write(sink, sse(error_json(*u.error)));
          } else {
            const std::string finish =
                st->parser ? chat_finish_reason(u.finish_reason, st->parser->n_calls()) : u.finish_reason;
            nlohmann::json last = chunk_json(st->ids, "", &finish, st->first, st->include_usage, nullptr, nullptr);
            add_timings(last, st->speculative, u);
            ok = write(sink, sse(last));
            if (ok && st->include_usage)
              ok = write(sink, sse(usage_chunk_json(st->ids, {st->n_prompt, u.n_generated, u.n_cached})));
          }
          if (ok) ok = write(sink, "data: [DONE]\n\n");
          st->finished = true;
          if (ok) sink.done();
        }
        return ok;
      },
      // However the stream ends (done, client gone, server stopping), the slot is freed.
      [st](bool) { st->job->cancelled = true; });
}

}  // namespace nvfp4::server

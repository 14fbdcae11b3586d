// nvfp4 serve: an OpenAI-compatible HTTP server with continuous batching (src/server/). It
// listens first (GET /health: 503 while loading), loads the model, serves until SIGTERM/SIGINT,
// then stops accepting, lets the requests in flight finish (up to --shutdown-grace seconds, then
// cancels them) and exits 0.
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/model_setup.h"
#include "cli/registry.h"
#include "nvfp4/chat.h"
#include "nvfp4/draft.h"
#include "nvfp4/error.h"
#include "server/http_server.h"
#include "server/scheduler.h"
#include "server/tool_calls.h"

namespace nvfp4::cli {
namespace {

struct ServeArgs {
  ModelArgs m;
  server::ServerOptions http;
  int parallel = 4;
  int queue = 64;
  std::string alias;
  std::string chat_template, chat_template_file;  // instead of the checkpoint's own
  std::string chat_kwargs;  // every request's template variables unless it gives its own
  double grace_s = 10;
  double timeout_head_s = 10, timeout_body_s = 60;
  int64_t responses_ttl_s = 3600;
  int threads_http = -1;  // -1: parallel + queue + 64
  bool cache_prompt = true;
  std::string spec;
  server::SpecOptions so;
  std::string draft_model, draft_precision;  // -md, --draft-precision
  bool draft_quantize = false;               // --draft-quantize
};

int serve(ServeArgs a) {
  // Template variables checked before the model loads.
  const auto kwargs = a.chat_kwargs.empty() ? std::map<std::string, std::string>{}
                                            : chat_template_kwargs(a.chat_kwargs, "--chat-template-kwargs");
  // Signals go to the thread that waits for them, none elsewhere; a client gone is a failed write.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  server::Metrics metrics;
  a.http.http_threads = a.threads_http > 0 ? a.threads_http : a.parallel + a.queue + 64;
  a.http.deadlines.head = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_head_s * 1000));
  a.http.deadlines.body = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_body_s * 1000));
  a.http.responses_ttl = std::chrono::seconds(a.responses_ttl_s);
  server::HttpServer http(a.http, metrics);
  const int port = http.bind();
  std::cerr << "nvfp4: listening on http://" << a.http.host << ":" << port << std::endl;
  std::thread http_thread([&] { http.listen(); });

  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread sig_thread([&] {
    int sig = 0;
    sigwait(&set, &sig);
    std::lock_guard lk(mu);
    stop = true;
    cv.notify_all();
  });

  int rc = 0;
  std::unique_ptr<server::Scheduler> sched;
  Loaded L, D;
  std::unique_ptr<DflashDrafter> dflash;
  std::unique_ptr<Gemma4Assistant> g4a;
  try {
    const bool assistant = resolve_spec(a.spec, a.draft_model, a.m.mtp_file);
    a.m.mtp = a.spec == "mtp" && !assistant;  // the checkpoint's own MTP layers
    a.m.mtp_quantize = a.m.mtp && a.draft_quantize;
    a.m.sequences = a.parallel;  // (--experts-budget auto leaves their KV caches room)
    L = load_model(a.m, false);
    a.so.mtp = a.m.mtp;
    a.so.mtp_name = a.m.mtp_file.empty() ? "(its mtp.* layers)" : a.m.mtp_file;
    if (a.spec == "draft") {
      ModelArgs dm = a.m;
      dm.model = a.draft_model;
      dm.precision = a.draft_precision;
      dm.quantize = a.m.quantize || a.draft_quantize;  // as the target, as before --draft-quantize
      dm.calibrate.clear();
      dm.experts_budget.clear();  // the experts' budget and file are the model's own
      dm.experts_file.clear();
      std::cerr << "nvfp4: draft model:\n";
      D = load_model(dm, false);
      check_draft_vocab(L.tok, L.model->config().n_vocab, a.m.model, D.tok, D.model->config().n_vocab, a.draft_model);
      a.so.draft = D.model.get();
      a.so.draft_name = a.draft_model;
    }
    if (a.spec == "dflash") {
      dflash = load_dflash(a.draft_model, L, a.m.mtp_allow_low, false, nullptr, a.draft_quantize);
      a.so.dflash = dflash.get();
    }
    if (assistant) {
      g4a = load_assistant(a.draft_model, L, a.m.mtp_allow_low, false, nullptr, a.draft_quantize);
      a.so.assistant = g4a.get();
    }
    server::SchedulerOptions so;
    so.parallel = a.parallel;
    so.n_ctx = a.m.n_ctx;
    so.n_batch = a.m.n_batch;
    so.queue = a.queue;
    so.threads = L.threads;
    so.kv = context_options(a.m).kv;
    so.cache_prompt = a.cache_prompt;
    so.spec = a.so;
    so.spec.ngram = a.spec == "ngram" || a.spec == "ngram-simple";
    if (so.spec.lookup.n_min > so.spec.lookup.n_max)
      throw Error("", "--spec-ngram-min", "--spec-ngram-min: the shortest n-gram looked up is at most the longest (--spec-ngram-max)",
                  "at most " + std::to_string(so.spec.lookup.n_max), std::to_string(so.spec.lookup.n_min));
    if (L.model->expert_stats().slots > 0) metrics.experts = [m = L.model.get()] { return m->expert_stats(); };
    sched = std::make_unique<server::Scheduler>(*L.model, L.tok, so, metrics);
    auto b = std::make_unique<server::Backend>();
    b->model_name = a.alias.empty() ? std::filesystem::path(a.m.model).filename().string() : a.alias;
    b->tok = &L.tok;
    // A template named on the command line must load (an error stops the server); the
    // checkpoint's own may be missing (chat completions then refuse).
    if (!a.chat_template.empty()) {
      b->chat = ChatTemplate::builtin(a.chat_template);
    } else if (!a.chat_template_file.empty()) {
      std::ifstream f(a.chat_template_file, std::ios::binary);
      if (!f) throw Error(a.chat_template_file, "", "cannot read the chat template file", "a readable file", "none");
      std::stringstream ss;
      ss << f.rdbuf();
      b->chat = ChatTemplate::parse(ss.str(), a.chat_template_file);
    } else {
      try {
        b->chat = ChatTemplate::parse(L.tok.chat_template(), a.m.model);
      } catch (const Error& e) {
        b->chat_error = e.what();
        std::cerr << "nvfp4: no chat template, /v1/chat/completions refuses: " << e.what() << "\n";
      }
    }
    if (b->chat) {
      // What a reply is parsed for (a generation prompt of Muse Glimmer's form shows its messages).
      const server::ChatParseOptions po = server::chat_parse_options(b->chat->text(), "", "<|start|>assistant");
      std::cerr << "nvfp4: chat template: " << b->chat->describe() << "\nnvfp4: chat: "
                << (b->chat->takes_tools() ? "" : "the template does not use tools (requests' tools are ignored), ")
                << "tool calls parsed as " << server::tool_format_name(server::tool_format_of(b->chat->text()))
                << (po.channels    ? ", reasoning (the to=self messages) split off"
                    : po.reasoning ? ", reasoning (" + po.think_open + "..." + po.think_close + ") split off"
                                   : std::string(", reasoning not split"))
                << std::endl;
    }
    if (L.tok.bos() >= 0) b->chat_opts.bos_token = L.tok.token_bytes(L.tok.bos());
    if (L.tok.eos() >= 0) b->chat_opts.eos_token = L.tok.token_bytes(L.tok.eos());
    b->chat_opts.json_vars = kwargs;
    b->sched = sched.get();
    b->grammars = std::make_shared<server::OutputCompiler>(L.tok);
    b->speculative = so.spec.on();
    b->n_ctx = a.m.n_ctx;
    b->n_embd = L.model->config().n_embd;
    b->created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    http.set_backend(std::move(b));
    std::cerr << "nvfp4: serving " << a.parallel << " slots of " << a.m.n_ctx << " positions, " << a.m.n_batch
              << " prompt tokens per step, prompt cache " << (a.cache_prompt ? "on" : "off") << std::endl;
    std::cerr << "nvfp4: speculative decoding: " << so.spec.describe() << std::endl;
    if (L.mode != Mode::a16q8 && L.mode != Mode::w4a4)
      std::cerr << "nvfp4: precision " << mode_name(L.mode) << " is not integer-exact: a request's last bits may change "
                << "with what shares its steps and with the prompt cache (bit-identical in a16q8 and w4a4)" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "nvfp4 serve: error: " << e.what() << "\n";
    rc = 1;
    kill(getpid(), SIGTERM);  // wakes the signal thread
  }
  {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return stop; });
  }
  std::cerr << "nvfp4: shutting down" << std::endl;
  // Every route answers 503 from now on and connections still reading a request are ended; the
  // requests in flight finish (or are cancelled at the end of the grace) and their responses are
  // sent; then every connection left is shut, so the exit comes within the grace whatever clients
  // do (one that does not read its stream, one that trickles a head).
  const auto t0 = std::chrono::steady_clock::now();
  const auto grace = std::chrono::milliseconds(static_cast<int64_t>(a.grace_s * 1000));
  http.drain();
  if (sched) sched->drain(grace);
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  http.wait_idle(std::max(grace - spent, std::chrono::milliseconds(0)) + std::chrono::milliseconds(500));
  http.close_all();
  http.stop();
  http_thread.join();
  sig_thread.join();
  if (sched) sched->stop();
  return rc;
}

const Registrar reg("serve", "OpenAI-compatible HTTP server with continuous batching", [](CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  a->m.add(app);
  app.add_option("--host", a->http.host, "address to listen on");
  app.add_option("--port", a->http.port, "port (0: any free one, printed at start)")->check(CLI::Range(0, 65535));
  app.add_option("--parallel", a->parallel, "slots: requests generated at once")->check(CLI::Range(1, 256));
  app.add_option("--queue", a->queue, "requests that may wait for a slot (more: 429)")->check(CLI::Range(0, 4096));
  app.add_option("--api-key", a->http.api_key, "require Authorization: Bearer KEY");
  app.add_option("--alias", a->alias, "model name in responses (default: the file name)");
  app.add_option("--chat-template", a->chat_template, "use this built-in chat template instead of the model's");
  app.add_option("--chat-template-file", a->chat_template_file, "use the Jinja chat template in this file instead")
      ->excludes("--chat-template");
  app.add_option("--chat-template-kwargs", a->chat_kwargs,
                 "default template variables as a JSON object, e.g. '{\"enable_thinking\": false}' (a request's "
                 "chat_template_kwargs or enable_thinking override them)");
  app.add_option("--max-body", a->http.max_body, "request body limit in bytes (more: 413)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  app.add_option("--shutdown-grace", a->grace_s, "seconds requests in flight may take at SIGTERM")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--timeout-head", a->timeout_head_s,
                 "seconds a client has to send a request's head, from its connection or previous response (default 10; more: 408)")
      ->check(CLI::Range(0.05, 3600.0));
  app.add_option("--timeout-body", a->timeout_body_s,
                 "seconds a client has to send a request's body, from its head (default 60; more: 408)")
      ->check(CLI::Range(0.05, 3600.0));
  app.add_option("--responses-store", a->http.responses_stored,
                 "past /v1/responses kept for previous_response_id (default 1024; 0: none)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 20));
  app.add_option("--responses-store-mib", a->http.responses_bytes_mib,
                 "the most memory their conversations may take, MiB (default 256; the oldest go first)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  app.add_option("--responses-ttl", a->responses_ttl_s, "seconds a past response is kept (default 3600)")
      ->check(CLI::Range(int64_t{1}, int64_t{30} * 86400));
  app.add_option("--threads-http", a->threads_http,
                 "connections served at once (default: --parallel + --queue + 64); more wait for a thread")
      ->check(CLI::Range(2, 4096));
  app.add_flag("--cache-prompt,!--no-cache-prompt", a->cache_prompt,
               "reuse a slot's KV for a prompt's common prefix (default: on; as llama-server's)");
  app.add_option("--spec,--spec-type", a->spec,
                 "speculative decoding: ngram (prompt lookup; also ngram-simple), draft (-md FILE), dflash (-md DIR: a DFlash assistant) or mtp (the checkpoint's MTP layers, --mtp "
                 "FILE, or -md DIR: a Gemma 4 assistant), bit-identical to plain decoding in a16q8/w4a4")
      ->check(CLI::IsMember({"ngram", "ngram-simple", "draft", "dflash", "mtp"}));
  app.add_option("--mtp", a->m.mtp_file, "speculative: an MTP side file (GGUF, llama.cpp's nextn layout) for --spec mtp (implies it)");
  app.add_flag("--spec-allow-low-acceptance", a->m.mtp_allow_low,
               "speculative: run an MTP module or assistant whose acceptance on the load-time check text is below 0.2 "
               "(refused otherwise)");
  app.add_option("--model-draft,--spec-draft-model", a->draft_model,
                 "speculative: the draft model, also -md (same vocabulary as the target; implies --spec draft), a DFlash "
                 "assistant's directory (implies --spec dflash) or a Gemma 4 assistant's (implies --spec mtp)");
  app.add_flag("--draft-quantize", a->draft_quantize, "draft model, MTP module, DFlash drafter or Gemma 4 assistant: quantize its float linear layers to NVFP4 at load");
  app.add_option("--draft-precision", a->draft_precision, "draft model: a16q8, a16, w4a4, f32 (default: its own default)")
      ->check(CLI::IsMember({"a16q8", "a16", "w4a4", "f32"}));
  app.add_option("--draft-max,--draft,--draft-n,--spec-draft-n-max", a->so.draft_max,
                 "speculative: draft tokens per slot and step (default 8; they count in --batch)")
      ->check(CLI::Range(1, 64));
  app.add_option("--draft-min,--draft-n-min,--spec-draft-n-min", a->so.draft_min,
                 "speculative: drop drafts shorter than this (default 0)")
      ->check(CLI::Range(0, 64));
  app.add_option("--draft-p-min,--spec-draft-p-min", a->so.draft_p_min,
                 "draft model: stop a draft at a token whose draft probability is below this (default 0: off; llama.cpp's is 0.75)")
      ->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--draft-vocab,--spec-draft-vocab", a->so.draft_vocab,
                 "--spec mtp: draft over the head's first N token ids only, a byte-pair vocabulary's most frequent "
                 "(the same output; a cheaper MTP step; default 0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app.add_option("--spec-window", a->so.window,
                 "speculative: requests per back-off window (default 8): speculation is judged over each window")
      ->check(CLI::Range(1, 100000));
  app.add_option("--spec-min-speedup", a->so.min_speedup,
                 "speculative: back off to plain decoding when a window's estimated speed-up is below this (default 1; 0: never)")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--spec-ngram-min", a->so.lookup.n_min, "speculative: shortest n-gram looked up (default 1)")
      ->check(CLI::Range(1, 16));
  app.add_option("--spec-ngram-max", a->so.lookup.n_max, "speculative: longest n-gram looked up (default 4)")
      ->check(CLI::Range(1, 16));
  app.add_flag("--spec-allow-drift", a->so.allow_drift,
               "allow speculation in a16/f32, where output may drift from plain decoding");
  return [a] { return serve(*a); };
});

}  // namespace
}  // namespace nvfp4::cli

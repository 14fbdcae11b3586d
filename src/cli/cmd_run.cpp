// nvfp4 run: generate text. Streams tokens as they come, then prompt and generation speed and peak
// memory (stderr); --json prints one object (text, ids, timings) instead.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/model_setup.h"
#include "cli/registry.h"
#include "nvfp4/chat.h"
#include "nvfp4/error.h"
#include "nvfp4/sampler.h"

namespace nvfp4::cli {
namespace {

struct RunArgs {
  ModelArgs m;
  std::string prompt, file, chat_template;
  int64_t n_predict = 128;
  bool chat = false, json = false;
  SamplerOptions s;
  bool temp_set = false, top_k_set = false, top_p_set = false;
};

int run(const RunArgs& a) {
  if (a.prompt.empty() == a.file.empty())
    throw Error("", "", "give the prompt with exactly one of -p or -f", "-p TEXT or -f FILE", "");
  Loaded L = load_model(a.m, a.json);
  std::string text = a.file.empty() ? a.prompt : read_text_file(a.file);
  const bool chat = a.chat || !a.chat_template.empty();
  if (chat) {
    const ChatTemplate t = a.chat_template.empty() ? ChatTemplate::parse(L.tok.chat_template(), a.m.model)
                                                   : ChatTemplate::builtin(a.chat_template);
    ChatRenderOptions o;  // bos/eos as text; the template places them (as apply_chat_template)
    if (L.tok.bos() >= 0) o.bos_token = L.tok.token_bytes(L.tok.bos());
    if (L.tok.eos() >= 0) o.eos_token = L.tok.token_bytes(L.tok.eos());
    text = t.render({{"user", text}}, o);
  }
  std::vector<int32_t> ids;
  if (!chat && L.tok.add_bos() && L.tok.bos() >= 0) ids.push_back(L.tok.bos());
  for (int32_t id : L.tok.encode(text)) ids.push_back(id);
  if (ids.empty()) throw Error("", "", "empty prompt", "at least one token", "0 tokens");
  ContextOptions co = context_options(a.m);
  co.n_ctx = std::min<int64_t>(co.n_ctx, static_cast<int64_t>(ids.size()) + a.n_predict);
  ThreadPool pool(L.threads);
  Context ctx(*L.model, co, pool);
  const int64_t nv = L.model->config().n_vocab;
  std::vector<float> logits(static_cast<size_t>(nv));
  using clk = std::chrono::steady_clock;
  const auto t0 = clk::now();
  ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), logits.data());
  const double prompt_s = std::chrono::duration<double>(clk::now() - t0).count();
  std::string said;
  const SamplerOptions so = generation_defaults(*L.ck, a.s, a.temp_set, a.top_k_set, a.top_p_set, said);
  if (!said.empty() && !a.json) std::cerr << "nvfp4: " << said << "\n";
  Sampler sampler(so);
  std::vector<int32_t> out;
  std::string generated;
  double gen_s = 0;
  int64_t gen_evals = 0;
  std::string stop = "length";
  while (static_cast<int64_t>(out.size()) < a.n_predict) {
    const int32_t tok = sampler.sample(logits.data(), nv);
    if (L.tok.is_eog(tok)) { stop = "eog"; break; }
    out.push_back(tok);
    const std::string piece = L.tok.token_bytes(tok);
    generated += piece;
    if (!a.json) std::cout << piece << std::flush;
    if (static_cast<int64_t>(out.size()) == a.n_predict) break;
    const auto t1 = clk::now();
    ctx.eval(&tok, 1, logits.data());
    gen_s += std::chrono::duration<double>(clk::now() - t1).count();
    ++gen_evals;
  }
  const double prompt_tps = static_cast<double>(ids.size()) / prompt_s;
  const double gen_tps = gen_evals > 0 ? static_cast<double>(gen_evals) / gen_s : 0.0;
  if (a.json) {
    nlohmann::json j;
    j["text"] = generated;
    j["prompt_ids"] = ids;
    j["ids"] = out;
    j["stop"] = stop;
    j["precision"] = std::string(mode_name(L.mode));
    j["sampling"] = {{"temperature", so.temperature}, {"top_k", so.top_k}, {"top_p", so.top_p}, {"seed", so.seed},
                     {"from_generation_config", !said.empty()}};
    j["threads"] = L.threads;
    j["prompt_tokens"] = ids.size();
    j["gen_tokens"] = out.size();
    j["prompt_s"] = prompt_s;
    j["gen_s"] = gen_s;
    j["prompt_tps"] = prompt_tps;
    j["gen_tps"] = gen_tps;
    j["load_s"] = L.load_s;
    j["peak_rss_mb"] = peak_rss_mib();
    std::cout << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "\n";
    std::cerr << "nvfp4: prompt " << ids.size() << " tokens, " << prompt_tps << " tok/s; generation "
              << out.size() << " tokens, " << gen_tps << " tok/s; peak RSS " << static_cast<int64_t>(peak_rss_mib())
              << " MiB\n";
  }
  return 0;
}

const Registrar reg("run", "generate text from a prompt", [](CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  a->m.add(app);
  app.add_option("-p,--prompt", a->prompt, "prompt text");
  app.add_option("-f,--file", a->file, "prompt file");
  app.add_option("-n,--n-predict", a->n_predict, "tokens to generate")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  app.add_flag("--chat", a->chat, "wrap the prompt in the model's chat template (user turn)");
  app.add_option("--chat-template", a->chat_template, "use this built-in chat template instead (implies --chat)");
  auto* temp = app.add_option("--temp", a->s.temperature, "temperature (0: greedy; default: generation_config.json's when it samples, else 0)")
                   ->check(CLI::Range(0.0f, 100.0f));
  auto* top_k = app.add_option("--top-k", a->s.top_k, "top-k (0: off)")->check(CLI::Range(0, 1 << 30));
  auto* top_p = app.add_option("--top-p", a->s.top_p, "top-p")->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--seed", a->s.seed, "sampling seed");
  app.add_flag("--json", a->json, "print one JSON object: text, ids, timings");
  return [a, temp, top_k, top_p] {
    a->temp_set = temp->count() > 0;
    a->top_k_set = top_k->count() > 0;
    a->top_p_set = top_p->count() > 0;
    return run(*a);
  };
});

}  // namespace
}  // namespace nvfp4::cli

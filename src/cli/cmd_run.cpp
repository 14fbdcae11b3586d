// nvfp4 run: generate text. Streams tokens as they come, then prompt and generation speed and peak
// memory (stderr); --json prints one object (text, ids, timings) instead.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/model_setup.h"
#include "cli/registry.h"
#include "nvfp4/chat.h"
#include "nvfp4/error.h"
#include "nvfp4/generate.h"
#include "nvfp4/sampler.h"

namespace nvfp4::cli {
namespace {

struct RunArgs {
  ModelArgs m;
  std::string prompt, file, chat_template;
  int64_t n_predict = 128;
  bool chat = false, json = false;
  SamplerOptions s;
  std::string spec;
  GenerateOptions g;
  bool allow_drift = false;
  bool temp_set = false, top_k_set = false, top_p_set = false;
};

int run(RunArgs& a) {
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
  Sequence seq(*L.model, co.n_ctx, co.kv);
  // Verification steps take up to draft_max + 1 tokens.
  Workspace ws(*L.model, std::max<int64_t>(std::min(co.n_batch, co.n_ctx), a.spec == "ngram" ? a.g.draft_max + 1 : 1));
  std::string said;
  a.g.sampling = generation_defaults(*L.ck, a.s, a.temp_set, a.top_k_set, a.top_p_set, said);
  if (!said.empty() && !a.json) std::cerr << "nvfp4: " << said << "\n";
  a.g.n_predict = a.n_predict;
  a.g.speculative = a.spec == "ngram";
  if (a.g.speculative && !a.json)
    std::cerr << "nvfp4: speculative decoding: prompt lookup (n-gram " << a.g.ngram.n_min << ".." << a.g.ngram.n_max
              << "), drafts of up to " << a.g.draft_max << " tokens, verified in one step"
              << (a.allow_drift ? " (drift allowed)" : " (bit-identical to plain decoding)") << "\n";
  std::string generated;
  const GenerateResult r = generate(*L.model, seq, ws, pool, ids, a.g, [&](int32_t t) { return L.tok.is_eog(t); },
                                    [&](int32_t t) {
                                      const std::string piece = L.tok.token_bytes(t);
                                      generated += piece;
                                      if (!a.json) std::cout << piece << std::flush;
                                    },
                                    a.allow_drift);
  const std::vector<int32_t>& out = r.tokens;
  const std::string& stop = r.stop;
  const double prompt_s = r.prompt_s, gen_s = r.gen_s;
  const double prompt_tps = static_cast<double>(ids.size()) / prompt_s;
  const double gen_tps = out.size() > 1 && gen_s > 0 ? static_cast<double>(out.size() - 1) / gen_s : 0.0;
  const SamplerOptions& so = a.g.sampling;
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
    j["decode_steps"] = r.steps;
    if (a.g.speculative)
      j["speculative"] = {{"method", "ngram"}, {"drafted", r.drafted}, {"accepted", r.accepted},
                          {"acceptance", r.drafted > 0 ? static_cast<double>(r.accepted) / static_cast<double>(r.drafted) : 0.0},
                          {"tokens_per_step", r.steps > 0 ? static_cast<double>(out.size() - 1) / static_cast<double>(r.steps) : 0.0},
                          {"backed_off", r.backed_off}, {"drift_allowed", a.allow_drift}};
    std::cout << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "\n";
    std::cerr << "nvfp4: prompt " << ids.size() << " tokens, " << prompt_tps << " tok/s; generation "
              << out.size() << " tokens, " << gen_tps << " tok/s; peak RSS " << static_cast<int64_t>(peak_rss_mib())
              << " MiB\n";
    if (a.g.speculative)
      std::cerr << "nvfp4: speculative: " << r.accepted << " of " << r.drafted << " drafted tokens accepted, "
                << r.steps << " decode steps for " << out.size() << " tokens"
                << (r.backed_off ? "; backed off to plain decoding (slower than plain over the last 16 steps)" : "") << "\n";
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
  app.add_option("--spec", a->spec, "speculative decoding: ngram (prompt lookup), bit-identical to plain decoding in a16q8/w4a4")
      ->check(CLI::IsMember({"ngram"}));
  app.add_option("--draft-max", a->g.draft_max, "speculative: draft tokens per step (default 8)")->check(CLI::Range(1, 64));
  app.add_option("--spec-ngram-min", a->g.ngram.n_min, "speculative: shortest n-gram looked up (default 1)")->check(CLI::Range(1, 16));
  app.add_option("--spec-ngram-max", a->g.ngram.n_max, "speculative: longest n-gram looked up (default 4)")->check(CLI::Range(1, 16));
  app.add_flag("--spec-allow-drift", a->allow_drift, "allow speculation in a16/f32, where output may drift from plain decoding");
  return [a, temp, top_k, top_p] {
    a->temp_set = temp->count() > 0;
    a->top_k_set = top_k->count() > 0;
    a->top_p_set = top_p->count() > 0;
    return run(*a);
  };
});

}  // namespace
}  // namespace nvfp4::cli

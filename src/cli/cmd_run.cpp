// nvfp4 run: generate text. Streams tokens as they come, then prompt and generation speed and peak
// memory (stderr); --json prints one object (text, ids, timings) instead.
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/bench_experts.h"
#include "cli/model_setup.h"
#include "cli/registry.h"
#include "nvfp4/chat.h"
#include "nvfp4/draft.h"
#include "nvfp4/error.h"
#include "nvfp4/generate.h"
#include "nvfp4/mtp_draft.h"
#include "nvfp4/sampler.h"

namespace nvfp4::cli {
namespace {

struct RunArgs {
  ModelArgs m;
  std::string prompt, file, chat_template, chat_kwargs;
  int64_t n_predict = 128;
  bool chat = false, json = false;
  SamplerOptions s;
  std::string spec;
  GenerateOptions g;
  std::string draft_model, draft_precision;  // --model-draft, --draft-precision
  bool draft_quantize = false;
  int draft_min = 0;
  float draft_p_min = 0.0f;
  int64_t draft_vocab = 0;
  bool allow_drift = false;
  bool temp_set = false, top_k_set = false, top_p_set = false;
};

const char* proposer_name(const std::string& spec) {
  return spec == "ngram" ? "prompt lookup" : spec == "mtp" ? "MTP module" : spec == "dflash" ? "DFlash assistant" : "draft model";
}

int run(RunArgs& a) {
  if (a.prompt.empty() == a.file.empty())
    throw Error("", "-p / -f", "give the prompt with exactly one of -p or -f", "-p TEXT or -f FILE", "");
  const bool assistant = resolve_spec(a.spec, a.draft_model, a.m.mtp_file);
  // Template variables checked before the model loads.
  const auto kwargs = a.chat_kwargs.empty() ? std::map<std::string, std::string>{}
                                            : chat_template_kwargs(a.chat_kwargs, "--chat-template-kwargs");
  a.m.mtp = a.spec == "mtp" && !assistant;  // the checkpoint's own MTP layers
  a.m.mtp_quantize = a.m.mtp && a.draft_quantize;
  Loaded L = load_model(a.m, a.json);
  // The draft model: its own weights (its default precision unless --draft-precision), checked to
  // share the target's vocabulary before anything runs.
  Loaded D;
  if (a.spec == "draft") {
    ModelArgs dm = a.m;
    dm.model = a.draft_model;
    dm.precision = a.draft_precision;
    dm.quantize = a.draft_quantize;
    dm.calibrate.clear();
    dm.experts_budget.clear();  // the experts' budget and file are the model's own
    dm.experts_file.clear();
    if (!a.json) std::cerr << "nvfp4: draft model:\n";
    D = load_model(dm, a.json);
    check_draft_vocab(L.tok, L.model->config().n_vocab, a.m.model, D.tok, D.model->config().n_vocab, a.draft_model);
  }
  std::unique_ptr<DflashDrafter> dflash;
  double draft_check = -1;
  if (a.spec == "dflash") dflash = load_dflash(a.draft_model, L, a.m.mtp_allow_low, a.json, &draft_check, a.draft_quantize);
  std::unique_ptr<Gemma4Assistant> g4a;
  if (assistant) g4a = load_assistant(a.draft_model, L, a.m.mtp_allow_low, a.json, &draft_check, a.draft_quantize);
  std::string text = a.file.empty() ? a.prompt : read_text_file(a.file);
  const bool chat = a.chat || !a.chat_template.empty() || !a.chat_kwargs.empty();
  if (chat) {
    const ChatTemplate t = a.chat_template.empty() ? ChatTemplate::parse(L.tok.chat_template(), a.m.model)
                                                   : ChatTemplate::builtin(a.chat_template);
    if (!a.json) std::cerr << "nvfp4: chat template: " << t.describe() << "\n";
    ChatRenderOptions o;  // bos/eos as text; the template places them (as apply_chat_template)
    if (L.tok.bos() >= 0) o.bos_token = L.tok.token_bytes(L.tok.bos());
    if (L.tok.eos() >= 0) o.eos_token = L.tok.token_bytes(L.tok.eos());
    o.json_vars = kwargs;
    text = t.render({{"user", text}}, o);
  }
  std::vector<int32_t> ids;
  if (!chat && L.tok.add_bos() && L.tok.bos() >= 0) ids.push_back(L.tok.bos());
  for (int32_t id : L.tok.encode(text)) ids.push_back(id);
  if (ids.empty()) throw Error("", "prompt", "empty prompt", "at least one token", "0 tokens");
  ContextOptions co = context_options(a.m);
  co.n_ctx = std::min<int64_t>(co.n_ctx, static_cast<int64_t>(ids.size()) + a.n_predict);
  ThreadPool pool(L.threads);
  Sequence seq(*L.model, co.n_ctx, co.kv);
  // Verification steps take up to draft_max + 1 tokens.
  Workspace ws(*L.model, std::max<int64_t>(std::min(co.n_batch, co.n_ctx), a.spec.empty() ? 1 : a.g.draft_max + 1));
  std::unique_ptr<DraftModelProposer> proposer;
  if (D.model) {
    proposer = std::make_unique<DraftModelProposer>(*D.model, pool, co.n_ctx, co.n_batch, co.kv);
    proposer->n_min = a.draft_min;
    proposer->p_min = a.draft_p_min;
    a.g.draft = proposer.get();
  }
  std::unique_ptr<AssistantProposer> asp;
  if (g4a) {
    asp = std::make_unique<AssistantProposer>(*g4a);
    asp->n_min = a.draft_min;
    asp->p_min = a.draft_p_min;
    a.g.assistant = asp.get();
  }
  std::unique_ptr<MtpProposer> mtp;
  if (a.spec == "mtp" && !assistant) {
    mtp = std::make_unique<MtpProposer>(*L.model, co.n_ctx, co.n_batch, co.kv);
    mtp->n_min = a.draft_min;
    mtp->p_min = a.draft_p_min;
    mtp->set_draft_vocab(a.draft_vocab);
    a.g.mtp = mtp.get();
  }
  std::unique_ptr<DflashProposer> dfp;
  if (dflash) {
    dfp = std::make_unique<DflashProposer>(*dflash, co.n_ctx, co.kv);
    dfp->n_min = a.draft_min;
    dfp->p_min = a.draft_p_min;
    a.g.dflash = dfp.get();
  }
  std::string said;
  a.g.sampling = generation_defaults(*L.ck, a.s, a.temp_set, a.top_k_set, a.top_p_set, said);
  if (!said.empty() && !a.json) std::cerr << "nvfp4: " << said << "\n";
  a.g.n_predict = a.n_predict;
  a.g.speculative = !a.spec.empty();
  if (a.g.speculative && !a.json) {
    std::cerr << "nvfp4: speculative decoding: ";
    if (a.spec == "ngram") std::cerr << "prompt lookup (n-gram " << a.g.ngram.n_min << ".." << a.g.ngram.n_max << ")";
    else if (assistant) std::cerr << "Gemma 4 assistant " << a.draft_model << " (greedy, draft-min " << a.draft_min << ", draft-p-min "
                                  << a.draft_p_min << ")";
    else if (a.spec == "mtp") std::cerr << "the checkpoint's MTP module" << (a.m.mtp_file.empty() ? "" : " (" + a.m.mtp_file + ")")
                                        << " (greedy, draft-min " << a.draft_min << ", draft-p-min " << a.draft_p_min
                                        << ", draft vocabulary " << mtp->draft_vocab() << " of " << L.model->config().n_vocab << ")";
    else if (a.spec == "dflash") std::cerr << "DFlash assistant " << a.draft_model << " (blocks of " << dflash->block_size()
                                           << ", greedy, draft-min " << a.draft_min << ", draft-p-min " << a.draft_p_min << ")";
    else std::cerr << "draft model " << a.draft_model << " (" << mode_name(D.mode) << ", greedy, draft-min " << a.draft_min
                   << ", draft-p-min " << a.draft_p_min << ")";
    std::cerr << ", drafts of up to " << a.g.draft_max << " tokens, verified in one step"
              << (a.allow_drift ? " (drift allowed)" : " (bit-identical to plain decoding)") << "\n";
  }
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
  const double acceptance = r.drafted > 0 ? static_cast<double>(r.accepted) / static_cast<double>(r.drafted) : 0.0;
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
    j["resident_mb"] = resident_mib();
    j["decode_steps"] = r.steps;
    if (const ExpertStats es = L.model->expert_stats(); es.slots > 0) {  // --experts-budget: the load's figures too
      j["experts"] = experts_part_json(es, static_cast<int64_t>(ids.size() + out.size()), prompt_s + gen_s);
      j["experts"]["file"] = es.file;
      j["experts"]["slots"] = es.slots;
      j["experts"]["written_mib"] = static_cast<double>(es.written) / (1 << 20);
    }
    if (a.g.speculative) {
      nlohmann::json sj = {{"method", a.spec}, {"proposer", proposer_name(a.spec)},
                           {"drafted", r.drafted}, {"accepted", r.accepted}, {"acceptance", acceptance},
                           {"tokens_per_step", r.steps > 0 ? static_cast<double>(out.size() - 1) / static_cast<double>(r.steps) : 0.0},
                           {"draft_max", a.g.draft_max}, {"proposer_s", r.draft_s},
                           {"backed_off", r.backed_off}, {"drift_allowed", a.allow_drift}};
      if (a.spec == "ngram") {
        sj["ngram_min"] = a.g.ngram.n_min;
        sj["ngram_max"] = a.g.ngram.n_max;
      } else if (assistant) {
        sj["proposer"] = "Gemma 4 assistant";
        sj["draft_model"] = a.draft_model;
        sj["draft_min"] = a.draft_min;
        sj["draft_p_min"] = a.draft_p_min;
        sj["draft_evaluated"] = asp->evaluated();
        sj["check_acceptance"] = draft_check;
      } else if (a.spec == "mtp") {
        sj["mtp_file"] = a.m.mtp_file.empty() ? a.m.model : a.m.mtp_file;
        sj["draft_min"] = a.draft_min;
        sj["draft_p_min"] = a.draft_p_min;
        sj["draft_evaluated"] = mtp->evaluated();
        sj["draft_vocab"] = mtp->draft_vocab();
        sj["check_acceptance"] = L.mtp_check;
      } else if (a.spec == "dflash") {
        sj["draft_model"] = a.draft_model;
        sj["block_size"] = dflash->block_size();
        sj["draft_min"] = a.draft_min;
        sj["draft_p_min"] = a.draft_p_min;
        sj["draft_evaluated"] = dfp->evaluated();
        sj["check_acceptance"] = draft_check;
      } else {
        sj["draft_model"] = a.draft_model;
        sj["draft_precision"] = std::string(mode_name(D.mode));
        sj["draft_min"] = a.draft_min;
        sj["draft_p_min"] = a.draft_p_min;
        sj["draft_evaluated"] = proposer->evaluated();
      }
      j["speculative"] = sj;
    }
    std::cout << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "\n";
    std::cerr << "nvfp4: prompt " << ids.size() << " tokens, " << prompt_tps << " tok/s; generation "
              << out.size() << " tokens, " << gen_tps << " tok/s; resident " << static_cast<int64_t>(resident_mib()) << " MiB (peak "
              << static_cast<int64_t>(peak_rss_mib()) << " MiB)\n";
    if (const ExpertStats es = L.model->expert_stats(); es.slots > 0)
      std::cerr << "nvfp4: experts: " << es.hits << " hits, " << es.misses << " misses, " << es.prefetched << " read ahead ("
                << static_cast<double>(es.bytes_read) / (1 << 20) << " MiB from disk; " << es.read_s * 1000 << " ms waited)\n";
    if (a.g.speculative)
      std::cerr << "nvfp4: speculative (" << (assistant ? "Gemma 4 assistant" : proposer_name(a.spec)) << "): " << r.accepted
                << " of " << r.drafted << " drafted tokens accepted (acceptance " << acceptance << "), " << r.steps << " decode steps for " << out.size() << " tokens"
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
  app.add_option("--chat-template-kwargs", a->chat_kwargs,
                 "template variables as a JSON object, e.g. '{\"enable_thinking\": false}' (implies --chat)");
  auto* temp = app.add_option("--temp", a->s.temperature, "temperature (0: greedy; default: generation_config.json's when it samples, else 0)")
                   ->check(CLI::Range(0.0f, 100.0f));
  auto* top_k = app.add_option("--top-k", a->s.top_k, "top-k (0: off)")->check(CLI::Range(0, 1 << 30));
  auto* top_p = app.add_option("--top-p", a->s.top_p, "top-p")->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--seed", a->s.seed, "sampling seed");
  app.add_flag("--json", a->json, "print one JSON object: text, ids, timings");
  app.add_option("--spec", a->spec,
                 "speculative decoding: ngram (prompt lookup), draft (--model-draft FILE), mtp (the checkpoint's MTP layers, "
                 "--mtp FILE, or a Gemma 4 assistant, -md DIR) or dflash (a DFlash assistant, -md DIR), bit-identical to plain decoding in a16q8/w4a4")
      ->check(CLI::IsMember({"ngram", "draft", "mtp", "dflash"}));
  app.add_option("--mtp", a->m.mtp_file, "speculative: an MTP side file (GGUF, llama.cpp's nextn layout) for --spec mtp (implies it)");
  app.add_flag("--spec-allow-low-acceptance", a->m.mtp_allow_low,
               "speculative: run an MTP module or assistant whose acceptance on the load-time check text is below 0.2 "
               "(refused otherwise)");
  app.add_option("--draft-max,--spec-draft-n-max", a->g.draft_max, "speculative: draft tokens per step (default 8)")->check(CLI::Range(1, 64));
  app.add_option("--model-draft,--spec-draft-model", a->draft_model,
                 "speculative: the draft model, also -md (same vocabulary as the target; implies --spec draft), a DFlash "
                 "assistant's directory (implies --spec dflash) or a Gemma 4 assistant's (implies --spec mtp)");
  app.add_option("--draft-min,--spec-draft-n-min", a->draft_min, "draft model: drop drafts shorter than this (default 0)")
      ->check(CLI::Range(0, 64));
  app.add_option("--draft-p-min,--spec-draft-p-min", a->draft_p_min,
                 "draft model: stop drafting at a token the draft gives less probability than this (default 0)")
      ->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--draft-vocab,--spec-draft-vocab", a->draft_vocab,
                 "--spec mtp: draft over the head's first N token ids only, a byte-pair vocabulary's most frequent "
                 "(the same output; a cheaper MTP step; default 0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app.add_option("--draft-precision", a->draft_precision, "draft model: a16q8, a16, w4a4, f32 (default: its own default)")
      ->check(CLI::IsMember({"a16q8", "a16", "w4a4", "f32"}));
  app.add_flag("--draft-quantize", a->draft_quantize, "draft model, MTP module, DFlash drafter or Gemma 4 assistant: quantize its float linear layers to NVFP4 at load");
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

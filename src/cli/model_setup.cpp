#include "io/json_config.h"
#include "nvfp4/mapped_file.h"
#include "nvfp4/memory_info.h"
#include "cli/model_setup.h"

#include "nvfp4/mtp_draft.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <iostream>
#include <sstream>
#include <thread>

#include "nvfp4/arch.h"
#include "nvfp4/calibrate.h"
#include "nvfp4/error.h"

namespace nvfp4::cli {

void ModelArgs::add(CLI::App& app, bool model_required) {
  auto* m = app.add_option("-m,--model", model, "checkpoint: a .gguf, or an HF directory (ModelOpt, compressed-tensors or float safetensors, sharded or not)");
  if (model_required) m->required();
  app.add_option("--precision", precision, "a16q8 (default for NVFP4), a16, w4a4, f32")
      ->check(CLI::IsMember({"a16q8", "a16", "w4a4", "f32"}));
  app.add_flag("--quantize", quantize, "quantize float linear layers to NVFP4 at load (SPEC section 4)");
  app.add_option("--calibrate", calibrate, "text file: calibrate w4a4 activation scales on the float model (with --quantize)");
  app.add_option("-t,--threads", threads, "threads (default: all cores)")->check(CLI::Range(0, 1024));
  app.add_option("--ctx", n_ctx, "context size (KV cache positions)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--batch", n_batch, "prompt tokens per forward pass")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app.add_option("--kv", kv, "KV cache type: f16 (default, as llama.cpp's), f32 (twice the bytes), fp8 (E4M3 at the checkpoint's calibrated k/v scales, else 1.0; half of f16)")
      ->check(CLI::IsMember({"f32", "f16", "fp8"}));
  app.add_option("--experts-budget", experts_budget,
                 "GiB of routed NVFP4 experts held in memory; the rest are read from disk as tokens route to them "
                 "(the same results). auto: what memory (and the memory cgroup) leaves once the dense weights are in");
  app.add_option("--experts-file", experts_file,
                 "with --experts-budget: the experts in the kernels' layout, written at load unless it holds them "
                 "(default: beside the model, MODEL.experts)");
  app.add_flag("--experts-read-ahead", experts_read_ahead,
               "with --experts-budget: read the next layer's likely experts (its router on this layer's input) while a "
               "token computes");
}

int64_t experts_budget_bytes(const std::string& v) {
  if (v.empty()) return -1;
  if (v == "auto") return kExpertsBudgetAuto;
  char* end = nullptr;
  const double g = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(g > 0) || g > 1e6)
    throw Error("", "--experts-budget", "the experts' memory budget", "GiB > 0 (e.g. 6 or 2.5) or auto", v);
  return static_cast<int64_t>(g * static_cast<double>(int64_t{1} << 30));
}

KvType kv_type(const std::string& name) {
  if (name == "f16") return KvType::f16;
  if (name == "fp8") return KvType::fp8;
  if (name == "f32") return KvType::f32;
  throw Error("", "", "KV cache type (--kv)", "f32, f16 or fp8", name);
}

ContextOptions context_options(const ModelArgs& a) {
  ContextOptions co;
  co.n_ctx = a.n_ctx;
  co.n_batch = a.n_batch;
  co.kv = kv_type(a.kv);
  return co;
}

std::string read_text_file(const std::string& path) {
  return read_regular_file(path);  // a FIFO or device is refused, not waited on
}

double peak_rss_mib() {
  struct rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

double resident_mib() {
  // /proc/self/statm: size resident shared text lib data dt, in pages.
  std::ifstream f("/proc/self/statm");
  long long size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0.0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

SamplerOptions generation_defaults(const Checkpoint& ck, SamplerOptions s, bool temp_set, bool top_k_set,
                                   bool top_p_set, std::string& said) {
  namespace fs = std::filesystem;
  said.clear();
  if (ck.info().container != "safetensors") return s;
  const fs::path p = ck.info().path;
  const fs::path f = (fs::is_directory(p) ? p : p.parent_path()) / "generation_config.json";
  if (!fs::exists(f)) return s;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(f.string()));
  } catch (const nlohmann::json::exception& e) {
    throw Error(f.string(), "", "not valid JSON", "a JSON document", e.what());
  }
  const auto num = [&](const char* k, double def) {
    if (!j.contains(k) || j[k].is_null()) return def;
    if (!j[k].is_number()) throw Error(f.string(), "", std::string("generation_config.json '") + k + "'", "a number", j[k].dump());
    return j[k].get<double>();
  };
  if (!(j.contains("do_sample") && j["do_sample"].is_boolean() && j["do_sample"].get<bool>())) return s;
  const float t = static_cast<float>(num("temperature", 1.0)), p_ = static_cast<float>(num("top_p", 1.0));
  const double k = num("top_k", 50);
  if (!(t >= 0 && t <= 100) || !(p_ > 0 && p_ <= 1) || !(k >= 0 && k <= (1 << 30)))
    throw Error(f.string(), "", "generation_config.json sampling values", "temperature 0..100, top_p (0, 1], top_k >= 0",
                std::to_string(t) + ", " + std::to_string(p_) + ", " + std::to_string(k));
  if (!temp_set) { s.temperature = t; said += " temperature " + std::to_string(t); }
  if (!top_k_set) { s.top_k = static_cast<int>(k); said += " top-k " + std::to_string(s.top_k); }
  if (!top_p_set) { s.top_p = p_; said += " top-p " + std::to_string(p_); }
  if (!said.empty()) said = "sampling defaults from " + f.string() + ":" + said;
  return s;
}

namespace {
// What the checkpoint declares of a quantized KV cache (ModelOpt kv_cache_quant_algo,
// compressed-tensors kv_cache_scheme) and whether its scales are loaded, beside the cache this
// run uses: said at load rather than left unsaid.
std::string kv_cache_note(const Checkpoint& ck, const Model& m, const std::string& kv) {
  namespace fs = std::filesystem;
  std::string declared;
  if (ck.info().container == "safetensors") {
    const fs::path p = ck.info().path;
    const fs::path dir = fs::is_directory(p) ? p : p.parent_path();
    for (const char* name : {"hf_quant_config.json", "config.json"}) {
      const fs::path f = dir / name;
      if (!fs::exists(f)) continue;
      nlohmann::json j;
      try {  // config.json as Python writes it (bare Infinity: io/json_config.h)
        j = std::string(name) == "config.json" ? parse_config_json(read_text_file(f.string()), f.string()) : nlohmann::json::parse(read_text_file(f.string()));
      } catch (const nlohmann::json::exception&) {
        continue;
      }
      if (!j.is_object()) continue;
      const nlohmann::json* q = j.contains("quantization") ? &j["quantization"] : j.contains("quantization_config") ? &j["quantization_config"] : nullptr;
      if (!q || !q->is_object()) continue;
      if (q->contains("kv_cache_quant_algo") && (*q)["kv_cache_quant_algo"].is_string())
        declared = "kv_cache_quant_algo " + (*q)["kv_cache_quant_algo"].get<std::string>();
      else if (q->contains("kv_cache_scheme") && (*q)["kv_cache_scheme"].is_object()) {
        const nlohmann::json& k = (*q)["kv_cache_scheme"];  // its type, bits and strategy, as the scheme's name says them
        const auto field = [&](const char* f) { return k.contains(f) && (k[f].is_string() || k[f].is_number()) ? k[f].dump() : std::string("?"); };
        declared = "kv_cache_scheme {type " + field("type") + ", num_bits " + field("num_bits") + ", strategy " + field("strategy") + "}";
      }
      if (!declared.empty()) {
        declared = f.filename().string() + " declares " + declared;
        break;
      }
    }
  }
  const bool calibrated = m.kv_scales_calibrated();
  if (kv == "fp8")
    return std::string("KV cache FP8 E4M3 at ") +
           (calibrated ? "the checkpoint's calibrated k/v scales" : "k/v scale 1.0 (the checkpoint has none; vLLM's default)") +
           (declared.empty() ? "" : " (" + declared + ")");
  if (declared.empty() && !calibrated) return "";
  return "note: " + (declared.empty() ? std::string("the checkpoint has k/v cache scales") : declared) + "; the cache is " + kv +
         " (--kv fp8 stores it as FP8 E4M3 at " + (calibrated ? "its calibrated scales" : "scale 1.0") + ")";
}
}  // namespace

void check_tokenizer_fits(const Checkpoint& ck, const Tokenizer& tok) {
  // Token ids index the embedding: a tokenizer longer than it contradicts the tensors.
  if (const TensorEntry* emb = ck.find("token_embd.weight"); emb && !emb->shape.empty() && tok.n_vocab() > emb->shape[0])
    throw Error(ck.info().path, "token_embd.weight", "the tokenizer has more tokens than the embedding has rows",
                "at most " + std::to_string(emb->shape[0]) + " tokens", std::to_string(tok.n_vocab()) + " tokens");
}

namespace {
// The MTP check text's ids as the target's tokenizer makes them.
std::vector<int32_t> check_ids(const Loaded& L) {
  std::vector<int32_t> ids;
  if (L.tok.add_bos() && L.tok.bos() >= 0) ids.push_back(L.tok.bos());
  for (int32_t id : L.tok.encode(kMtpCheckText)) ids.push_back(id);
  return ids;
}
// A drafter's acceptance `a` on the check text: refused below the floor naming `dir` and `flag`
// unless allow_low; logged (`what`, `describe`) unless quiet.
void judge_acceptance(double a, int64_t positions, const std::string& dir, const std::string& flag, const std::string& what,
                      const std::string& describe, bool allow_low, bool quiet, double* check) {
  if (check) *check = a;
  char got[64];
  std::snprintf(got, sizeof got, "%.3f over %lld positions", a, static_cast<long long>(positions));
  if (a < kMtpAcceptanceFloor && !allow_low)
    throw Error(dir, flag,
                "the " + what + "'s acceptance on the check text (the target's own greedy picks; near 0: an assistant "
                "made for another target, or mismatched weights)",
                "at least " + std::to_string(kMtpAcceptanceFloor).substr(0, 4) + " (or --spec-allow-low-acceptance)", got);
  if (!quiet)
    std::cerr << "nvfp4: " << describe << "\nnvfp4: " << what << ": acceptance " << got << " on the check text (floor "
              << kMtpAcceptanceFloor << (a < kMtpAcceptanceFloor ? ", allowed below it by --spec-allow-low-acceptance" : "") << ")\n";
}
}  // namespace

namespace {
// A drafter of type D at `dir` for L's model, loaded and judged on the check text by
// acceptance(drafter, ids, pool, &positions).
template <class D, class Acceptance>
std::unique_ptr<D> load_judged(const std::string& dir, const Loaded& L, bool allow_low, bool quiet, double* check, bool quantize,
                               Acceptance acceptance, const std::string& flag, const std::string& what) {
  auto d = std::make_unique<D>(dir, *L.model, quantize);
  ThreadPool pool(L.threads);
  int64_t positions = 0;
  const double a = acceptance(*d, check_ids(L), pool, &positions);
  judge_acceptance(a, positions, dir, flag, what, d->describe(), allow_low, quiet, check);
  return d;
}
}  // namespace

std::unique_ptr<DflashDrafter> load_dflash(const std::string& dir, const Loaded& L, bool allow_low, bool quiet, double* check,
                                           bool quantize) {
  return load_judged<DflashDrafter>(dir, L, allow_low, quiet, check, quantize, dflash_acceptance, "--spec dflash", "DFlash assistant");
}

std::unique_ptr<Gemma4Assistant> load_assistant(const std::string& dir, const Loaded& L, bool allow_low, bool quiet, double* check,
                                                bool quantize) {
  return load_judged<Gemma4Assistant>(dir, L, allow_low, quiet, check, quantize, assistant_acceptance, "--spec mtp",
                                      "Gemma 4 assistant");
}

bool resolve_spec(std::string& spec, const std::string& draft_model, const std::string& mtp_file) {
  const bool md = !draft_model.empty(), dflash = md && is_dflash_assistant(draft_model), assistant = md && is_gemma4_assistant(draft_model);
  // -md alone drafts, as in llama.cpp: with a draft model, or an assistant's directory.
  if (md && spec.empty()) spec = dflash ? "dflash" : assistant ? "mtp" : "draft";
  if ((spec == "draft" || spec == "dflash") && !md)
    throw Error("", "--model-draft", "--spec " + spec + " needs the draft model", "--model-draft " + std::string(spec == "draft" ? "FILE" : "DIR") + " (-md)",
                "no --model-draft");
  if (md && spec != "draft" && spec != "dflash" && !(spec == "mtp" && assistant))
    throw Error(draft_model, "", "--model-draft is the draft model of --spec draft or dflash, or a Gemma 4 assistant's directory with --spec mtp",
                "--spec draft, dflash or mtp", "--spec " + spec);
  if ((spec == "draft" || spec == "dflash") && assistant)
    throw Error(draft_model, "model_type", "a Gemma 4 assistant drafts with --spec mtp (it reads the target's hidden states and keys)",
                "--spec mtp", "--spec " + spec);
  if (spec == "draft" && dflash)
    throw Error(draft_model, "model_type", "a DFlash assistant drafts with --spec dflash (it reads the target's hidden states)",
                "--spec dflash", "--spec draft");
  if (!mtp_file.empty() && spec.empty()) spec = "mtp";  // --mtp FILE alone drafts with it
  if (!mtp_file.empty() && spec != "mtp")
    throw Error(mtp_file, "", "--mtp is the MTP side file of --spec mtp", "--spec mtp", "--spec " + spec);
  if (!mtp_file.empty() && assistant)
    throw Error(mtp_file, "", "one MTP draft: the checkpoint's MTP layers (--mtp FILE) or a Gemma 4 assistant (--model-draft DIR)",
                "one of them", "both");
  return assistant;
}

Loaded load_model(const ModelArgs& a, bool quiet) {
  const auto t0 = std::chrono::steady_clock::now();
  Loaded L;
  // A DFlash drafter is said as what it is before anything (it has no tokenizer of its own).
  if (is_dflash_assistant(a.model))
    throw Error((std::filesystem::path(a.model) / "config.json").string(), "model_type", dflash_run_alone_refusal(a.model),
                "a model to run", dflash_format(a.model));
  if (is_gemma4_assistant(a.model))
    throw Error((std::filesystem::path(a.model) / "config.json").string(), "model_type", gemma4_assistant_refusal(a.model),
                "a model to run", gemma4_assistant_type(a.model));
  Checkpoint::OpenOptions oo;
  oo.mtp = a.mtp && a.mtp_file.empty();  // the release's own MTP layers, read instead of set aside
  L.ck = Checkpoint::open(a.model, oo);
  if (a.mtp && !a.mtp_file.empty()) L.mtp_ck = Checkpoint::open(a.mtp_file);
  // An architecture this engine does not run is said before anything else (a drafter release has
  // no tokenizer of its own): Model::check stops at it, naming it.
  if (const gguf::Value* arch = L.ck->meta("general.architecture");
      arch && arch->type == gguf::ValueType::string && !find_arch(arch->s, L.ck->meta(arch->s + ".expert_count") != nullptr))
    Model::check(*L.ck, LoadOptions{});
  L.tok = Tokenizer::from_checkpoint(*L.ck);
  check_tokenizer_fits(*L.ck, L.tok);
  forget_tokenizer_arrays(*L.ck);  // nothing after reads them: not beside the weights at the peak
  L.threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool any_nvfp4 = a.quantize;
  for (const auto& e : L.ck->tensors()) any_nvfp4 = any_nvfp4 || e.storage == Storage::nvfp4;
  L.mode = a.precision.empty() ? (any_nvfp4 ? Mode::a16q8 : Mode::f32) : parse_mode(a.precision);
  LoadOptions lo;
  lo.mode = L.mode;
  lo.quantize = a.quantize;
  lo.mtp = a.mtp;
  lo.mtp_source = L.mtp_ck.get();
  lo.mtp_quantize = a.mtp_quantize;
  lo.experts_budget = experts_budget_bytes(a.experts_budget);
  lo.experts_file = a.experts_file;
  lo.experts_read_ahead = a.experts_read_ahead;
  lo.threads = L.threads;
  if (!a.experts_file.empty() && a.experts_budget.empty())
    throw Error(a.experts_file, "--experts-file", "the experts' file is read with a budget", "--experts-budget GIB|auto", "none");
  if (!a.calibrate.empty()) {
    if (!a.quantize)
      throw Error(a.calibrate, "", "--calibrate applies to layers quantized at load", "--quantize", "no --quantize");
    const auto toks = L.tok.encode(read_text_file(a.calibrate), false);
    lo.input_scales = calibrate_input_scales(*L.ck, toks, std::min<int64_t>(a.n_ctx, 512), L.threads);
  }
  L.model = Model::load(*L.ck, lo);
  if (lo.experts_budget == kExpertsBudgetAuto && L.model->expert_stats().slots > 0) {
    // What memory leaves now (the dense weights in) less the KV caches and recurrent states the
    // sequences will take, 256 MiB and a twentieth.
    const ModelConfig& c = L.model->config();
    const KvType kt = kv_type(a.kv);
    const int64_t elem = kt == KvType::f32 ? 4 : kt == KvType::f16 ? 2 : 1;
    int64_t per_seq = 0;
    for (int64_t l = 0; l < c.n_layer; ++l)
      per_seq += c.mixer(l) == MixerKind::attention ? 2 * c.kv_dim() * elem * a.n_ctx : c.recurrent_floats(l) * 4;
    const MemoryInfo mi = memory_info();
    const int64_t avail = mi.available(), kv = per_seq * a.sequences;
    const int64_t budget = std::max<int64_t>(avail - kv - (int64_t{256} << 20) - avail / 20, 0);
    L.model->set_experts_budget(budget);
    if (!quiet)
      std::cerr << "nvfp4: experts budget auto: " << (budget >> 20) << " MiB (" << mi.describe() << "; KV caches and states "
                << (kv >> 20) << " MiB for " << a.sequences << " sequence" << (a.sequences == 1 ? "" : "s") << " of " << a.n_ctx
                << "; 256 MiB and a twentieth kept free)\n";
  }
  if (a.mtp) {  // the module checked before anything drafts with it
    std::vector<int32_t> ids;
    if (L.tok.add_bos() && L.tok.bos() >= 0) ids.push_back(L.tok.bos());
    for (int32_t id : L.tok.encode(kMtpCheckText)) ids.push_back(id);
    ThreadPool pool(L.threads);
    L.mtp_check = mtp_acceptance(*L.model, ids, pool);
    char got[64];
    std::snprintf(got, sizeof got, "%.3f over %zu positions", L.mtp_check, ids.size() - 2);
    if (L.mtp_check < kMtpAcceptanceFloor && !a.mtp_allow_low)
      throw Error(a.mtp_file.empty() ? a.model : a.mtp_file, "--spec mtp",
                  "the MTP module's acceptance on the check text (the trunk's own greedy picks; near 0: wrong precision, "
                  "missing or mismatched MTP weights)",
                  "at least " + std::to_string(kMtpAcceptanceFloor).substr(0, 4) + " (or --spec-allow-low-acceptance)", got);
    if (!quiet)
      std::cerr << "nvfp4: MTP module: acceptance " << got << " on the check text (floor " << kMtpAcceptanceFloor
                << (L.mtp_check < kMtpAcceptanceFloor ? ", allowed below it by --spec-allow-low-acceptance" : "") << ")\n";
  }
  L.load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet) {
    std::cerr << "nvfp4: " << a.model << " (" << L.ck->info().container << ", " << L.ck->info().producer
              << ", " << L.ck->info().algorithm << ")" << (a.quantize ? ", quantized to NVFP4 at load" : "") << "\n";
    for (const auto& line : L.ck->info().set_aside) std::cerr << "nvfp4: left out: " << line << "\n";
    for (const auto& line : L.model->describe()) std::cerr << "nvfp4: " << line << "\n";
    if (const std::string n = kv_cache_note(*L.ck, *L.model, a.kv); !n.empty()) std::cerr << "nvfp4: " << n << "\n";
    std::cerr << "nvfp4: precision " << mode_name(L.mode) << ", " << L.threads << " threads, loaded in "
              << static_cast<int>(L.load_s * 1000) << " ms\n";
  }
  return L;
}

}  // namespace nvfp4::cli

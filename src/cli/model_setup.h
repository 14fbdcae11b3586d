// Shared by `run`, `quality` and `bench model`: the model options of the command line, loading
// with a log of what runs, and the process's peak memory.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "nvfp4/checkpoint.h"
#include "nvfp4/dflash_draft.h"
#include "nvfp4/gemma4_assistant.h"
#include "nvfp4/model.h"
#include "nvfp4/sampler.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4::cli {

struct ModelArgs {
  std::string model;
  std::string precision;  // empty: a16q8 for NVFP4 checkpoints, f32 for float ones
  bool quantize = false;
  std::string calibrate;  // text file for w4a4 activation scales (with --quantize)
  int threads = 0;        // 0: all cores
  int64_t n_ctx = 2048;
  int64_t n_batch = 64;
  std::string kv = "f16";  // llama.cpp's default cache type; attention reads it as stored
  // --spec mtp: load the checkpoint's MTP layers too, from the checkpoint or the side file
  // `mtp_file` (--mtp FILE; a GGUF of llama.cpp's nextn layout).
  bool mtp = false;
  std::string mtp_file;
  bool mtp_allow_low = false;  // --spec-allow-low-acceptance: run an MTP module below the floor
  bool mtp_quantize = false;   // --draft-quantize with --spec mtp: the module's float layers to NVFP4
  // --experts-budget GIB|auto and --experts-file PATH (LoadOptions::experts_budget / experts_file).
  std::string experts_budget;
  std::string experts_file;
  bool experts_read_ahead = false;
  int64_t sequences = 1;  // the sequences that will hold a KV cache (serve: --parallel), for `auto`
  void add(CLI::App& app, bool model_required = true);
};

struct Loaded {
  std::unique_ptr<Checkpoint> ck;
  std::unique_ptr<Checkpoint> mtp_ck;  // the MTP side file (--mtp FILE), when given
  Tokenizer tok;
  std::unique_ptr<Model> model;
  Mode mode = Mode::f32;
  int threads = 1;
  double load_s = 0;
  double mtp_check = -1;  // --spec mtp: the module's acceptance on the check text (kMtpCheckText)
};

// The acceptance an MTP module must reach on the check text for --spec mtp to run it.
inline constexpr double kMtpAcceptanceFloor = 0.2;

// --spec dflash: the DFlash assistant at `dir` for L's model (quantize: --draft-quantize), its acceptance on the MTP check text
// measured (into *check) and refused below kMtpAcceptanceFloor unless allow_low
// (--spec-allow-low-acceptance); logged to stderr unless quiet.
std::unique_ptr<DflashDrafter> load_dflash(const std::string& dir, const Loaded& L, bool allow_low, bool quiet, double* check,
                                           bool quantize = false);

// --spec mtp with a Gemma 4 assistant (-md DIR): the assistant at `dir` for L's model, checked as
// load_dflash checks a DFlash assistant.
std::unique_ptr<Gemma4Assistant> load_assistant(const std::string& dir, const Loaded& L, bool allow_low, bool quiet, double* check,
                                                bool quantize = false);

// --spec, --model-draft (-md) and --mtp as run and serve take them: -md alone drafts with what its
// path holds (a DFlash assistant: --spec dflash; a Gemma 4 assistant: --spec mtp; else --spec
// draft), --mtp FILE alone means --spec mtp; what does not go together is refused naming both.
// Returns whether the draft is a Gemma 4 assistant (--spec mtp with -md DIR).
bool resolve_spec(std::string& spec, const std::string& draft_model, const std::string& mtp_file);

// The tokenizer's ids all index the embedding (its rows), or an Error naming both.
void check_tokenizer_fits(const Checkpoint& ck, const Tokenizer& tok);
// Opens, validates and prepares; logs (to stderr unless quiet) what runs: mode, kernels, memory.
Loaded load_model(const ModelArgs& a, bool quiet);
ContextOptions context_options(const ModelArgs& a);
// --experts-budget's bytes: kExpertsBudgetAuto for "auto", -1 for none; else GiB > 0 (nvfp4::Error otherwise).
int64_t experts_budget_bytes(const std::string& v);
// The KV cache type of a --kv name (f32, f16, fp8; anything else: nvfp4::Error).
KvType kv_type(const std::string& name);
double peak_rss_mib();
// The process's resident memory now (VmRSS), MiB: the weights as held once the mapped file's pages
// are released, plus the KV cache and scratch touched so far.
double resident_mib();
// The sampling defaults of an HF checkpoint's generation_config.json (do_sample, temperature,
// top_k, top_p, as transformers reads them: temperature 1, top_k 50, top_p 1 when absent) for
// the fields the user did not set; `said` describes what was taken (empty: nothing).
SamplerOptions generation_defaults(const Checkpoint& ck, SamplerOptions s, bool temp_set, bool top_k_set,
                                   bool top_p_set, std::string& said);
std::string read_text_file(const std::string& path);

}  // namespace nvfp4::cli

#include "cli/model_setup.h"

#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "nvfp4/calibrate.h"
#include "nvfp4/error.h"

namespace nvfp4::cli {

void ModelArgs::add(CLI::App& app, bool model_required) {
  auto* m = app.add_option("-m,--model", model, "checkpoint (.gguf: NVFP4 or float/ggml types)");
  if (model_required) m->required();
  app.add_option("--precision", precision, "a16q8 (default for NVFP4), a16, w4a4, f32")
      ->check(CLI::IsMember({"a16q8", "a16", "w4a4", "f32"}));
  app.add_flag("--quantize", quantize, "quantize float linear layers to NVFP4 at load (SPEC section 4)");
  app.add_option("--calibrate", calibrate, "text file: calibrate w4a4 activation scales on the float model (with --quantize)");
  app.add_option("-t,--threads", threads, "threads (default: all cores)")->check(CLI::Range(0, 1024));
  app.add_option("--ctx", n_ctx, "context size (KV cache positions)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--batch", n_batch, "prompt tokens per forward pass")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app.add_option("--kv", kv, "KV cache type")->check(CLI::IsMember({"f32", "f16"}));
}

ContextOptions context_options(const ModelArgs& a) {
  ContextOptions co;
  co.n_ctx = a.n_ctx;
  co.n_batch = a.n_batch;
  co.kv = a.kv == "f16" ? KvType::f16 : KvType::f32;
  return co;
}

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path, "", "cannot read file", "a readable file", "open failed");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double peak_rss_mib() {
  struct rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

Loaded load_model(const ModelArgs& a, bool quiet) {
  const auto t0 = std::chrono::steady_clock::now();
  Loaded L;
  L.ck = Checkpoint::open(a.model);
  L.tok = Tokenizer::from_checkpoint(*L.ck);
  L.threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool any_nvfp4 = a.quantize;
  for (const auto& e : L.ck->tensors()) any_nvfp4 = any_nvfp4 || e.storage == Storage::nvfp4;
  L.mode = a.precision.empty() ? (any_nvfp4 ? Mode::a16q8 : Mode::f32) : parse_mode(a.precision);
  LoadOptions lo;
  lo.mode = L.mode;
  lo.quantize = a.quantize;
  if (!a.calibrate.empty()) {
    if (!a.quantize)
      throw Error(a.calibrate, "", "--calibrate applies to layers quantized at load", "--quantize", "no --quantize");
    const auto toks = L.tok.encode(read_text_file(a.calibrate), false);
    lo.input_scales = calibrate_input_scales(*L.ck, toks, std::min<int64_t>(a.n_ctx, 512), L.threads);
  }
  L.model = Model::load(*L.ck, lo);
  L.load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet) {
    std::cerr << "nvfp4: " << a.model << " (" << L.ck->info().container << ", " << L.ck->info().producer
              << ", " << L.ck->info().algorithm << ")" << (a.quantize ? ", quantized to NVFP4 at load" : "") << "\n";
    for (const auto& line : L.model->describe()) std::cerr << "nvfp4: " << line << "\n";
    std::cerr << "nvfp4: precision " << mode_name(L.mode) << ", " << L.threads << " threads, loaded in "
              << static_cast<int>(L.load_s * 1000) << " ms\n";
  }
  return L;
}

}  // namespace nvfp4::cli

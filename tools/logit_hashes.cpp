// logit_hashes: one line per (checkpoint, mode, path) with a 64-bit FNV-1a hash of every logit the
// path computes, so a restructuring of the engine can show that no bit moved (issue 28: "record a
// hash of every logit of every fixture and the bundled model in a16q8, w4a4 and f32, for run,
// serve and speculation").
//
//   nvfp4_logit_hashes [--threads N] [--quantize] CHECKPOINT...
//
// Paths (the same token ids for every checkpoint: (7919 i + 13) mod n_vocab):
//   run     Context::eval of 24 tokens in windows of 5, every position's logits (as `run` does).
//   run-kv-fp8  the same with an FP8 KV cache (`--kv fp8`, at the checkpoint's k/v scales).
//   serve   forward() over 3 sequences whose prompts (11, 7, 16 tokens) are cut into steps of
//           different compositions, then 4 decode steps of all three together (as `serve` does);
//           every logits row in step order.
//   spec    generate() with n-gram speculation, greedy and sampled (seed 7), 20 tokens each: the
//           tokens and the count of steps are hashed (speculation is exact only in a16q8/w4a4;
//           in other modes the line says "n/a").
// Modes: a16q8, w4a4 (where the checkpoint serves it) and f32. A line reads
//   <checkpoint> <mode> <path> <hash> [isa=<isa> when the mode's bits follow the ISA]
// a16q8 and w4a4 are the same bits on every ISA and thread count (SPEC section 5) for checkpoints
// whose linear layers are NVFP4, float in the pinned order or integer-exact FP8 (docs/
// DETERMINISM.md; describe() counts "0 float (f32)"); f32 (and MXFP8 or block-scaled FP8 layers
// in any mode) follow the vector width, so those lines carry the ISA and compare only on one
// machine.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "nvfp4/checkpoint.h"
#include "nvfp4/generate.h"
#include "nvfp4/kernels.h"
#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"

using namespace nvfp4;

namespace {

struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void add(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
};

std::vector<int32_t> ids(int64_t n, int64_t n_vocab, int64_t offset = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>((7919 * (i + offset) + 13) % n_vocab);
  return v;
}

uint64_t run_path(const Model& m, ThreadPool& pool, KvType kv = KvType::f16) {
  const int64_t nv = m.config().n_vocab;
  ContextOptions co;
  co.n_ctx = 64;
  co.n_batch = 5;
  co.kv = kv;
  Context ctx(m, co, pool);
  const auto p = ids(24, nv);
  std::vector<float> out(p.size() * static_cast<size_t>(nv));
  ctx.eval(p.data(), static_cast<int64_t>(p.size()), out.data(), true);
  Fnv f;
  f.add(out.data(), out.size() * sizeof(float));
  return f.h;
}

uint64_t serve_path(const Model& m, ThreadPool& pool) {
  const int64_t nv = m.config().n_vocab;
  const int64_t lens[3] = {11, 7, 16};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Sequence> seqs;
  for (int s = 0; s < 3; ++s) {
    prompts.push_back(ids(lens[s] + 4, nv, 100 * (s + 1)));
    seqs.emplace_back(m, 64, KvType::f16);
  }
  // Steps: (sequence, tokens) in step order; then 4 decode steps of one token each.
  const std::vector<std::vector<std::pair<int, int64_t>>> sched = {
      {{0, 4}, {1, 7}}, {{2, 9}, {0, 3}}, {{0, 4}, {2, 7}}, {{0, 1}, {1, 1}, {2, 1}},
      {{2, 1}, {0, 1}, {1, 1}}, {{1, 1}, {2, 1}, {0, 1}}, {{0, 1}, {1, 1}, {2, 1}}};
  Workspace ws(m, 32);
  Fnv f;
  for (const auto& step : sched) {
    std::vector<StepToken> toks;
    for (const auto& [s, count] : step) {
      Sequence& q = seqs[static_cast<size_t>(s)];
      int64_t pos = q.pos();
      for (const StepToken& t : toks)
        if (t.seq == &q) ++pos;
      for (int64_t i = 0; i < count; ++i, ++pos)
        toks.push_back(StepToken{prompts[static_cast<size_t>(s)][static_cast<size_t>(pos)], &q, pos, true});
    }
    std::vector<float> logits(toks.size() * static_cast<size_t>(nv));
    forward(m, toks, ws, pool, logits.data());
    f.add(logits.data(), logits.size() * sizeof(float));
  }
  return f.h;
}

uint64_t spec_path(const Model& m, ThreadPool& pool) {
  const int64_t nv = m.config().n_vocab;
  // A prompt that repeats itself, so n-gram lookup has drafts to offer.
  std::vector<int32_t> p = ids(8, nv);
  const std::vector<int32_t> again = p;
  p.insert(p.end(), again.begin(), again.end());
  Fnv f;
  for (float temp : {0.0f, 0.8f}) {
    GenerateOptions o;
    o.n_predict = 20;
    o.sampling.temperature = temp;
    o.sampling.seed = 7;
    o.speculative = true;
    o.backoff = false;
    Sequence seq(m, 64, KvType::f16);
    Workspace ws(m, 32);
    const GenerateResult r = generate(m, seq, ws, pool, p, o, [](int32_t) { return false; }, [](int32_t) {});
    f.add(r.tokens.data(), r.tokens.size() * sizeof(int32_t));
  }
  return f.h;
}

bool all_nvfp4(const Model& m) {
  // The model's own description counts its linear layers by storage ("... N NVFP4, M float ...").
  for (const std::string& line : m.describe())
    if (line.rfind("linear layers:", 0) == 0) return line.find(", 0 float") != std::string::npos;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  bool quantize = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--quantize")) quantize = true;
    else if (!std::strcmp(argv[i], "--help")) {
      std::puts("usage: nvfp4_logit_hashes [--threads N] [--quantize] CHECKPOINT...");
      return 0;
    } else paths.push_back(argv[i]);
  }
  if (paths.empty()) {
    std::fputs("nvfp4_logit_hashes: no checkpoint given (--help)\n", stderr);
    return 2;
  }
  ThreadPool pool(threads);
  const std::string isa(isa_name(active_isa()));
  int failures = 0;
  for (const std::string& path : paths) {
    std::unique_ptr<Checkpoint> ck;
    try {
      ck = Checkpoint::open(path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), e.what());
      ++failures;
      continue;
    }
    for (Mode mode : {Mode::a16q8, Mode::w4a4, Mode::f32}) {
      LoadOptions lo;
      lo.mode = mode;
      lo.quantize = quantize;
      std::unique_ptr<Model> m;
      try {
        m = Model::load(*ck, lo);
      } catch (const std::exception& e) {
        std::printf("%s %s load refused\n", path.c_str(), std::string(mode_name(mode)).c_str());
        continue;
      }
      const bool exact = mode != Mode::f32 && all_nvfp4(*m);
      const std::string tail = exact ? "" : " isa=" + isa;
      const std::string head = path + " " + std::string(mode_name(mode));
      std::printf("%s run %016llx%s\n", head.c_str(), static_cast<unsigned long long>(run_path(*m, pool)), tail.c_str());
      std::printf("%s run-kv-fp8 %016llx%s\n", head.c_str(), static_cast<unsigned long long>(run_path(*m, pool, KvType::fp8)), tail.c_str());
      std::printf("%s serve %016llx%s\n", head.c_str(), static_cast<unsigned long long>(serve_path(*m, pool)), tail.c_str());
      if (mode == Mode::f32) std::printf("%s spec n/a\n", head.c_str());
      else std::printf("%s spec %016llx%s\n", head.c_str(), static_cast<unsigned long long>(spec_path(*m, pool)), tail.c_str());
      std::fflush(stdout);
    }
  }
  return failures ? 1 : 0;
}

#include "cli/bench_util.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <immintrin.h>

#include <nlohmann/json.hpp>

#include "nvfp4/huge_pages.h"
#include "nvfp4/kernels.h"

namespace nvfp4::cli::bench {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}

Stats stats_of(std::vector<double> ms) {
  Stats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  const size_t k = ms.size();
  s.median_ms = k % 2 ? ms[k / 2] : 0.5 * (ms[k / 2 - 1] + ms[k / 2]);
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  return s;
}

BusyLoad::BusyLoad(int procs) {
  const pid_t parent = ::getpid();
  for (int i = 0; i < procs; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(0);
      volatile uint64_t x = 0;
      for (;;) x = x + 1;  // the load: one core's worth of integer work, no memory traffic
    }
    if (pid > 0) pids_.push_back(pid);
  }
}

BusyLoad::~BusyLoad() {
  for (int pid : pids_) ::kill(pid, SIGKILL);
  for (int pid : pids_) ::waitpid(pid, nullptr, 0);
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t l3_bytes() {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lv(dir + "level"), sz(dir + "size");
    int level = 0;
    std::string size;
    if (!(lv >> level) || !(sz >> size) || level != 3 || size.empty()) continue;
    int64_t v = std::stoll(size);
    const char unit = size.back();
    if (unit == 'K') v <<= 10;
    if (unit == 'M') v <<= 20;
    return v;
  }
  return int64_t{32} << 20;
}

namespace {

// Sum of words [b, e): 8 independent sums per 64-byte line and a software prefetch 8 KiB ahead
// (on this project's VM the hardware prefetcher alone left plain loads at about half the
// bandwidth the kernels reach; the roofline must be the best plain read, not a weak one).
uint64_t read_scalar(const uint64_t* p, int64_t b, int64_t e, int64_t ahead) {
  uint64_t s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __builtin_prefetch(p + i + ahead);
    for (int k = 0; k < 8; ++k) s[k] += p[i + k];
  }
  for (; i < e; ++i) s[0] += p[i];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

// The same with one 64-byte load per line, as the kernels read (fewer instructions per byte,
// so a busy machine's CPU share does not masquerade as memory bandwidth).
__attribute__((target("avx512f"))) uint64_t read_avx512(const uint64_t* p, int64_t b, int64_t e, int64_t ahead) {
  __m512i s0 = _mm512_setzero_si512(), s1 = s0;
  int64_t i = b;
  for (; i + 16 <= e; i += 16) {
    __builtin_prefetch(p + i + ahead);
    __builtin_prefetch(p + i + ahead + 8);
    s0 = _mm512_add_epi64(s0, _mm512_loadu_si512(p + i));
    s1 = _mm512_add_epi64(s1, _mm512_loadu_si512(p + i + 8));
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(s0, s1));
  uint64_t t = 0;
  for (uint64_t v : lanes) t += v;
  for (; i < e; ++i) t += p[i];
  return t;
}

}  // namespace

double dram_read_gbps(ThreadPool& pool, int64_t bytes) {
  static HugeVector<uint64_t> buf;  // as the weights: 2 MiB pages where the kernel gives them
  const size_t words = static_cast<size_t>(bytes / 8);
  if (buf.size() < words) buf.assign(words, 0x0101010101010101ull);
  std::atomic<uint64_t> total{0};
  const bool wide = isa_supported(Isa::avx512);
  // The best of three prefetch distances (in words: 1, 2 and 8 KiB ahead): on the SPR-class guest
  // of BENCHMARKS 14 one core read 19.4 GB/s at 1 KiB, 19.0 at 2 KiB and 16.3 at 8 KiB, the only
  // distance this probe used before (tools/stream_compute_probe.cpp).
  double best = 0;
  for (const int64_t ahead : {int64_t{128}, int64_t{256}, int64_t{1024}}) {
    const double t0 = now_ms();
    pool.run(static_cast<int64_t>(words), [&](int64_t b, int64_t e) {
      total += wide ? read_avx512(buf.data(), b, e, ahead) : read_scalar(buf.data(), b, e, ahead);
    }, 512);
    const double ms = now_ms() - t0;
    best = std::max(best, static_cast<double>(words * 8) / (ms * 1e6));
  }
  volatile uint64_t sink = total.load();
  (void)sink;
  return best;
}

std::string exe_dir() {
  char exe[4096];
  const ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (k <= 0) return ".";
  exe[k] = '\0';
  const std::string path(exe);
  return path.substr(0, path.rfind('/'));
}

std::string repo_file(const std::string& rel) {
  const std::string beside = exe_dir() + "/../" + rel;
  return access(beside.c_str(), R_OK) == 0 ? beside : rel;
}

Peer find_peer(const std::string& hint) {
  Peer p;
  std::vector<std::string> candidates;
  if (!hint.empty()) candidates.push_back(hint);
  if (const char* e = std::getenv("NVFP4_BENCH_PEER")) candidates.emplace_back(e);
  candidates.emplace_back("build-peer/nvfp4-peer-bench");
  candidates.push_back(exe_dir() + "/../build-peer/nvfp4-peer-bench");
  for (const auto& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) {
      p.path = c;
      return p;
    }
  }
  p.why = "ggml peer not built (run scripts/setup-bench-peer.sh, or pass --peer PATH)";
  return p;
}

std::optional<Stats> run_peer(const Peer& peer, const std::string& weights_file, int64_t n_out,
                              int64_t n_in, int64_t n, int threads, int reps, bool dram,
                              int64_t dram_bytes, double max_s) {
  if (peer.path.empty()) return std::nullopt;
  const std::string cmd = peer.path + " --weights " + weights_file + " --n-out " + std::to_string(n_out) +
                          " --n-in " + std::to_string(n_in) + " --n " + std::to_string(n) +
                          " --threads " + std::to_string(threads) + " --reps " + std::to_string(reps) +
                          " --residency " + (dram ? "dram" : "cache") + " --dram-bytes " +
                          std::to_string(dram_bytes) + " --max-s " + std::to_string(max_s);
  std::unique_ptr<FILE, int (*)(FILE*)> f(popen(cmd.c_str(), "r"), pclose);
  if (!f) return std::nullopt;
  std::string out;
  char line[4096];
  while (fgets(line, sizeof(line), f.get())) out += line;
  const size_t brace = out.rfind('{');
  if (brace == std::string::npos) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(out.substr(brace));
    return Stats{j.at("median_ms").get<double>(), j.at("min_ms").get<double>(), j.at("max_ms").get<double>()};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace nvfp4::cli::bench

// Measuring helpers of `nvfp4 bench`: the DRAM read roofline, the L3 size, timing statistics,
// and the ggml peer (an external program built by scripts/setup-bench-peer.sh).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nvfp4/thread_pool.h"

namespace nvfp4::cli::bench {

// A comma-separated option ("1,2", "f16,fp8") as its non-empty items, in order.
std::vector<std::string> split_list(const std::string& s);

struct Stats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
};
Stats stats_of(std::vector<double> ms);
double now_ms();

// The directory of the running nvfp4 binary, and a repository file found beside it (build/..)
// or else relative to the working directory.
std::string exe_dir();
std::string repo_file(const std::string& rel);

// L3 size in bytes from sysfs (index with level 3 of cpu0); 32 MiB when sysfs says nothing.
int64_t l3_bytes();

// Streams a buffer of `bytes` (allocated and touched once, kept for the process) with the pool's
// threads and returns the read bandwidth in GB/s (1e9 bytes per second): the best of three passes,
// prefetching 1, 2 and 8 KiB ahead.
double dram_read_gbps(ThreadPool& pool, int64_t bytes);

// A fixed competing load: `procs` child processes that each spin on a core until the object is
// destroyed (SIGKILL, reaped); they die with this process too (PR_SET_PDEATHSIG).
class BusyLoad {
 public:
  explicit BusyLoad(int procs);
  ~BusyLoad();
  BusyLoad(const BusyLoad&) = delete;
  BusyLoad& operator=(const BusyLoad&) = delete;

 private:
  std::vector<int> pids_;
};

// The ggml peer: `peer --weights F --n-out A --n-in B --n N --threads T --reps R
// --residency dram|cache --dram-bytes X --max-s S` prints one JSON line with median_ms, min_ms, max_ms.
struct Peer {
  std::string path;  // empty: unavailable
  std::string why;   // why unavailable
};
Peer find_peer(const std::string& hint);
std::optional<Stats> run_peer(const Peer& peer, const std::string& weights_file, int64_t n_out,
                              int64_t n_in, int64_t n, int threads, int reps, bool dram,
                              int64_t dram_bytes, double max_s);

}  // namespace nvfp4::cli::bench

// How much of one core's read bandwidth survives when the core also computes on what it reads.
// Not part of the build: a measurement behind docs/BENCHMARKS.md section 14, run by hand:
//   g++ -O2 -std=c++20 -mavx512f -mavx512bw -mavx512vnni tools/stream_compute_probe.cpp -o /tmp/probe && /tmp/probe
// It streams 1 GiB (2 MiB pages, as the weights) on one thread, 128 bytes per iteration with a
// software prefetch D bytes ahead (none, or 1-32 KiB), and does K vpshufb + K vpdpbusd per
// iteration on the loaded bytes into 8 independent accumulators, so the work is throughput-bound
// like a kernel's, not latency-bound. It prints the bare stream (K = 0) at each distance, then for
// each K at 2 KiB and 8 KiB the compute alone (the same loop over an L1-resident 16 KiB slice) and
// the stream's rate with it, against the best bare stream.
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <int K, int D>
__attribute__((noinline)) int64_t stream(const uint8_t* p, size_t n) {
  const __m512i w = _mm512_set1_epi8(3), ctl = _mm512_set1_epi8(5);
  __m512i acc[8];
  for (auto& a : acc) a = _mm512_setzero_si512();
  for (size_t i = 0; i < n; i += 128) {
    if constexpr (D > 0) {
      _mm_prefetch(reinterpret_cast<const char*>(p + i + D), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + i + D + 64), _MM_HINT_T0);
    }
    const __m512i x = _mm512_loadu_si512(p + i), y = _mm512_loadu_si512(p + i + 64);
#pragma GCC unroll 32
    for (int k = 0; k < K; ++k) {
      const __m512i t = _mm512_shuffle_epi8(k % 2 ? y : x, _mm512_add_epi8(ctl, _mm512_set1_epi8(static_cast<char>(k))));
      acc[k % 8] = _mm512_dpbusd_epi32(acc[k % 8], t, w);
    }
    acc[0] = _mm512_add_epi32(acc[0], x);
    acc[1] = _mm512_add_epi32(acc[1], y);
  }
  __m512i s = acc[0];
  for (int k = 1; k < 8; ++k) s = _mm512_add_epi32(s, acc[k]);
  return _mm512_reduce_add_epi32(s);
}

template <int K, int D>
void row(const uint8_t* p, size_t n, double probe, volatile int64_t& sink) {
  std::vector<double> c, s;
  for (int r = 0; r < 5; ++r) {
    double t0 = now();
    for (size_t o = 0; o < n; o += 16384) sink = sink + stream<K, D>(p, 16384);
    c.push_back((now() - t0) / static_cast<double>(n / 128) * 1e9);
    t0 = now();
    sink = sink + stream<K, D>(p, n);
    s.push_back(static_cast<double>(n) / (now() - t0) / 1e9);
  }
  std::sort(c.begin(), c.end());
  std::sort(s.begin(), s.end());
  const double dram_ns = 128.0 / probe;  // ns per 128 bytes at the probe's rate
  std::printf("D=%5d K=%2d  compute %5.2f ns/128 B = %3.0f%% of the stream's time  |  stream %5.2f GB/s (%.2f-%.2f) = %3.0f%% of the probe\n",
              D, K, c[2], 100.0 * c[2] / dram_ns, s[2], s[0], s[4], 100.0 * s[2] / probe);
}
}  // namespace

template <int D>
double bare(const uint8_t* p, size_t n, volatile int64_t& sink) {
  std::vector<double> v;
  for (int r = 0; r < 5; ++r) {
    const double t0 = now();
    sink = sink + stream<0, D>(p, n);
    v.push_back(static_cast<double>(n) / (now() - t0) / 1e9);
  }
  std::sort(v.begin(), v.end());
  std::printf("bare stream, prefetch %5d bytes ahead: %5.2f GB/s (%.2f-%.2f)\n", D, v[2], v[0], v[4]);
  return v[2];
}

int main() {
  const size_t n = size_t{1} << 30;
  auto* p = static_cast<uint8_t*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return 1;
  madvise(p, n, MADV_HUGEPAGE);
  std::memset(p, 1, n);
  volatile int64_t sink = 0;
  double probe = 0;
  probe = std::max(probe, bare<0>(p, n, sink));
  probe = std::max(probe, bare<1024>(p, n, sink));
  probe = std::max(probe, bare<2048>(p, n, sink));
  probe = std::max(probe, bare<4096>(p, n, sink));
  probe = std::max(probe, bare<8192>(p, n, sink));
  probe = std::max(probe, bare<32768>(p, n, sink));
  std::printf("best bare stream: %.2f GB/s\n", probe);
  row<2, 2048>(p, n, probe, sink);
  row<4, 2048>(p, n, probe, sink);
  row<8, 2048>(p, n, probe, sink);
  row<12, 2048>(p, n, probe, sink);
  row<16, 2048>(p, n, probe, sink);
  row<2, 8192>(p, n, probe, sink);
  row<4, 8192>(p, n, probe, sink);
  row<8, 8192>(p, n, probe, sink);
  row<12, 8192>(p, n, probe, sink);
  row<16, 8192>(p, n, probe, sink);
  return 0;
}

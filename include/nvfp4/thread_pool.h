// A small thread pool with a fixed partition: run(count, fn) splits [0, count) into contiguous
// chunks by a formula of (count, threads, align) only, so the ranges fn sees never depend on
// timing, and since every caller computes each item independently of which thread runs it, the
// integer-exact modes stay bit-identical for any thread count.
//
// Who runs a chunk is not fixed: the caller and the workers claim the chunks in order from one
// counter. A worker that another process has descheduled therefore stalls nobody unless it was
// preempted inside a chunk; the others take the chunks it did not start. There are a few chunks
// per thread (kChunksPerThread) so that what one preempted thread holds is small. A caller may
// ask for fewer: a decode matvec streams its weights from DRAM, and each chunk a thread claims
// starts a stream of its own (the claims alternate between threads, so a thread's chunks are not
// adjacent): the software prefetch's lead is lost at every start, a cost that is a large share of
// a small layer's few microseconds. Those calls pass kStreamChunksPerThread (one contiguous
// stretch per thread: per_thread_for(); docs/BENCHMARKS.md section 53).
//
// Hand-off: a decode step dispatches a few hundred short jobs (tens of microseconds each), so
// waking sleeping threads through the kernel for each one costs a large share of the step.
// Workers and the caller therefore spin (with pause, yielding after a few microseconds) for a
// short while before they sleep on a condition variable; with more threads than cores they sleep
// at once. The spin budget adapts: when the caller's wait outlasts it (another process holds a
// core), it halves; when waits end within it, it doubles back up to kMaxSpinNs.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nvfp4 {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1; the calling thread is one of them
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  // Calls fn(begin, end) for each chunk of [0, count) (chunks(count, align, per_thread) of them, see
  // partition()); ranges are aligned to `align` items (the last takes the rest). Returns when all
  // are done. Not reentrant: one run() at a time, from one thread.
  void run(int64_t count, const std::function<void(int64_t, int64_t)>& fn, int64_t align = 1,
           int per_thread = kChunksPerThread);
  // How many chunks run() splits count items into: min(units, threads * per_thread), one when
  // threads == 1.
  int chunks(int64_t count, int64_t align, int per_thread = kChunksPerThread) const;
  // run() calls so far that handed work to the workers (hand-offs); 0 with one thread.
  uint64_t dispatches() const { return dispatches_.load(std::memory_order_relaxed); }
  // Diagnostics (bench model --profile): while timing is on, each hand-off adds threads x its wall
  // time (from the job's publication to its last chunk's end) to `capacity_ns` and each chunk's
  // own time to `busy_ns`; 1 - busy / capacity is the share of the dispatches' time the threads
  // stood idle (waiting for a slower thread, or waking). Off by default: two clock reads a chunk.
  struct Timing {
    int64_t capacity_ns = 0, busy_ns = 0;
  };
  void set_timing(bool on) { timing_on_.store(on, std::memory_order_relaxed); }
  Timing timing() const { return {capacity_ns_.load(std::memory_order_relaxed), busy_ns_.load(std::memory_order_relaxed)}; }

  static constexpr int kChunksPerThread = 4;
  static constexpr int kStreamChunksPerThread = 1;
  // Chunks per thread for a dispatch over weight rows that computes `cols` columns: one stretch
  // per thread while the weights' stream bounds the time (decode, a verify of one draft), the
  // default beyond, where the kernels are compute-bound and more chunks even out the threads.
  static constexpr int64_t kStreamMaxCols = 2;
  static int per_thread_for(int64_t cols) { return cols <= kStreamMaxCols ? kStreamChunksPerThread : kChunksPerThread; }

 private:
  void worker();
  // Claims and runs chunks of generation gen until none are left; false when gen is over.
  void drain(uint64_t gen);
  static constexpr int64_t kMaxSpinNs = 200000;
  int threads_;
  int64_t max_spin_ns_;              // 0 when threads > cores
  std::atomic<int64_t> spin_ns_{0};  // how long to spin before sleeping now
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  // The job: written by run() before the release store of ticket_, read only after a successful
  // claim of one of its chunks (so run() cannot have moved on to the next job meanwhile).
  std::atomic<const std::function<void(int64_t, int64_t)>*> job_{nullptr};
  std::atomic<int64_t> count_{0}, align_{1};
  std::atomic<int> chunks_{0};
  // generation << 32 | next unclaimed chunk.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<int> done_{0};  // chunks of the current generation finished
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> dispatches_{0};
  std::atomic<bool> timing_on_{false};
  std::atomic<int64_t> capacity_ns_{0}, busy_ns_{0};
};

// [begin, end) of part `index` of `parts` for `count` items aligned to `align`.
void partition(int64_t count, int parts, int index, int64_t align, int64_t& begin, int64_t& end);

}  // namespace nvfp4

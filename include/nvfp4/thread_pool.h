// A small thread pool with a fixed partition: run(count, fn) splits [0, count) into one
// contiguous range per thread by a formula of (count, threads) only, so which thread computes a
// row never changes its result, and the integer-exact modes stay bit-identical for any count.
//
// Hand-off: a decode step dispatches a few hundred short jobs (tens of microseconds each), so
// waking sleeping threads through the kernel for each one costs a large share of the step.
// Workers and the caller therefore spin (with pause) for a short while before they sleep on a
// condition variable; with more threads than cores they sleep at once. The spin budget adapts:
// when the caller's wait outlasts it (another process holds a core and a worker is descheduled),
// it halves; when waits end within it, it doubles back up to kMaxSpinNs.
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
  // Calls fn(begin, end) for each thread's range of [0, count); ranges are aligned to `align`
  // items (the last range takes the rest). Returns when all are done.
  void run(int64_t count, const std::function<void(int64_t, int64_t)>& fn, int64_t align = 1);

 private:
  void worker(int index);
  static constexpr int64_t kMaxSpinNs = 200000;
  int threads_;
  int64_t max_spin_ns_;             // 0 when threads > cores
  std::atomic<int64_t> spin_ns_{0};  // how long to spin before sleeping now
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  // Written by run() before the release increment of generation_, read after its acquire load.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t count_ = 0, align_ = 1;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

// [begin, end) of part `index` of `parts` for `count` items aligned to `align`.
void partition(int64_t count, int parts, int index, int64_t align, int64_t& begin, int64_t& end);

}  // namespace nvfp4

#include "nvfp4/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define NVFP4_PAUSE() _mm_pause()
#else
#define NVFP4_PAUSE() ((void)0)
#endif

namespace nvfp4 {

void partition(int64_t count, int parts, int index, int64_t align, int64_t& begin, int64_t& end) {
  const int64_t units = (count + align - 1) / align;
  const int64_t per = units / parts, extra = units % parts;
  const int64_t ub = index * per + std::min<int64_t>(index, extra);
  const int64_t ue = ub + per + (index < extra ? 1 : 0);
  begin = std::min(count, ub * align);
  end = std::min(count, ue * align);
}

namespace {

// Spins until done() or spin_ns have passed; true when done() became true. After the first
// 20 microseconds it yields between checks, so that on a busy machine a spinning thread gives
// its core to the thread it waits for instead of burning the time slice.
template <class Done>
bool spin_until(int64_t spin_ns, Done done) {
  if (spin_ns <= 0) return done();
  const auto start = std::chrono::steady_clock::now();
  const auto polite = start + std::chrono::microseconds(20);
  const auto until = start + std::chrono::nanoseconds(spin_ns);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      NVFP4_PAUSE();
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return done();
    if (now >= polite) std::this_thread::yield();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  const unsigned cores = std::thread::hardware_concurrency();
  max_spin_ns_ = (cores == 0 || static_cast<unsigned>(threads_) <= cores) ? kMaxSpinNs : 0;
  spin_ns_.store(max_spin_ns_);
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    const auto started = [&] {
      return stop_.load(std::memory_order_acquire) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(spin_ns_.load(std::memory_order_relaxed), started)) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_start_.wait(lock, started);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    int64_t b, e;
    partition(count_, threads_, index, align_, b, e);
    if (b < e) (*job_)(b, e);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The caller may be asleep: take the lock so the notify cannot fall between its check
      // of pending_ and its wait.
      std::lock_guard<std::mutex> lock(mu_);
      cv_done_.notify_one();
    }
  }
}

void ThreadPool::run(int64_t count, const std::function<void(int64_t, int64_t)>& fn, int64_t align) {
  if (threads_ == 1 || count <= align) {
    if (count > 0) fn(0, count);
    return;
  }
  job_ = &fn;
  count_ = count;
  align_ = std::max<int64_t>(1, align);
  pending_.store(threads_ - 1, std::memory_order_relaxed);
  {
    // Under the lock, so a worker between its check and its wait cannot miss the notify.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_start_.notify_all();
  int64_t b, e;
  partition(count, threads_, 0, align_, b, e);
  if (b < e) fn(b, e);
  const auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  const int64_t budget = spin_ns_.load(std::memory_order_relaxed);
  if (spin_until(budget, done)) {
    // The workers kept up: spin longer next time (up to the maximum).
    spin_ns_.store(std::min(max_spin_ns_, budget * 2 + 1000), std::memory_order_relaxed);
  } else {
    // They did not (a busy machine descheduled one): spinning only burned the time slice that
    // thread needs, so halve the budget.
    spin_ns_.store(budget / 2, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(mu_);
    cv_done_.wait(lock, done);
  }
}

}  // namespace nvfp4

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

constexpr uint64_t kChunkMask = 0xffffffffu;
// The chunk index a finished generation is closed with before the next job is written: above any
// chunk count, and far from the generation bits.
constexpr uint64_t kClosed = 0x7fffffffu;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::chunks(int64_t count, int64_t align, int per_thread) const {
  if (threads_ == 1) return 1;
  const int64_t units = (count + std::max<int64_t>(1, align) - 1) / std::max<int64_t>(1, align);
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(units, int64_t{threads_} * std::max(1, per_thread))));
}

void ThreadPool::drain(uint64_t gen) {
  uint64_t t = ticket_.load(std::memory_order_acquire);
  for (;;) {
    if ((t >> 32) != gen) return;
    const int c = static_cast<int>(t & kChunkMask);
    // chunks_ may already be the next job's when this one is used up; the claim below then
    // fails, because the next job changed the generation first.
    // Acquire: a count written for the next job comes after run() closed this generation, so
    // the claim below then fails.
    if (c >= chunks_.load(std::memory_order_acquire)) return;
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // Chunk c of this job is ours and unfinished, so run() is still waiting: the job is stable.
    const int n = chunks_.load(std::memory_order_relaxed);
    int64_t b, e;
    partition(count_.load(std::memory_order_relaxed), n, c, align_.load(std::memory_order_relaxed), b, e);
    if (b < e) {
      if (timing_on_.load(std::memory_order_relaxed)) {
        const int64_t t0 = now_ns();
        (*job_.load(std::memory_order_relaxed))(b, e);
        busy_ns_.fetch_add(now_ns() - t0, std::memory_order_relaxed);
      } else {
        (*job_.load(std::memory_order_relaxed))(b, e);
      }
    }
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
      // The caller may be asleep: take the lock so the notify cannot fall between its check
      // of done_ and its wait.
      std::lock_guard<std::mutex> lock(mu_);
      cv_done_.notify_one();
      return;
    }
    t = ticket_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker() {
  uint64_t seen = 0;
  for (;;) {
    const auto started = [&] {
      return stop_.load(std::memory_order_acquire) ||
             (ticket_.load(std::memory_order_acquire) >> 32) != seen;
    };
    if (!spin_until(spin_ns_.load(std::memory_order_relaxed), started)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1, std::memory_order_relaxed);
      cv_start_.wait(lock, started);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = ticket_.load(std::memory_order_acquire) >> 32;
    drain(seen);
  }
}

void ThreadPool::run(int64_t count, const std::function<void(int64_t, int64_t)>& fn, int64_t align, int per_thread) {
  align = std::max<int64_t>(1, align);
  if (threads_ == 1 || count <= align) {
    if (count > 0) fn(0, count);
    return;
  }
  const int n = chunks(count, align, per_thread);
  // Close the finished generation first. A worker may still hold a ticket of it that it read
  // before its last chunk was claimed; if it then read this job's chunk count (larger) and
  // claimed against the old ticket, it would run a chunk of a job that is not its own and count
  // it in this job's done_ (run() returning early, or never). With the generation closed, any
  // such claim fails: the count is published (release) after the close.
  ticket_.store((ticket_.load(std::memory_order_relaxed) & ~kChunkMask) | kClosed, std::memory_order_relaxed);
  job_.store(&fn, std::memory_order_relaxed);
  count_.store(count, std::memory_order_relaxed);
  align_.store(align, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  chunks_.store(n, std::memory_order_release);
  dispatches_.fetch_add(1, std::memory_order_relaxed);
  // Timing: from before the job is published (no chunk can start earlier) to its end.
  const bool timed = timing_on_.load(std::memory_order_relaxed);
  struct Capacity {  // the hand-off's wall time, however run() returns below
    const ThreadPool* pool;
    std::atomic<int64_t>* sum;
    bool on;
    int64_t t0;
    ~Capacity() {
      if (on) sum->fetch_add((now_ns() - t0) * pool->threads(), std::memory_order_relaxed);
    }
  } capacity{this, &capacity_ns_, timed, timed ? now_ns() : 0};
  uint64_t gen;
  bool wake;
  {
    // Under the lock, so a worker between its check and its wait cannot miss the notify.
    std::lock_guard<std::mutex> lock(mu_);
    gen = ((ticket_.load(std::memory_order_relaxed) >> 32) + 1) & kChunkMask;
    ticket_.store(gen << 32, std::memory_order_release);
    wake = sleepers_.load(std::memory_order_relaxed) > 0;
  }
  if (wake) cv_start_.notify_all();
  drain(gen);
  const auto done = [&] { return done_.load(std::memory_order_acquire) == n; };
  const int64_t budget = spin_ns_.load(std::memory_order_relaxed);
  if (spin_until(budget, done)) {
    // The workers kept up: spin longer next time (up to the maximum).
    spin_ns_.store(std::min(max_spin_ns_, budget * 2 + 1000), std::memory_order_relaxed);
  } else {
    // They did not (a busy machine descheduled one inside a chunk): spinning only burned the
    // time slice that thread needs, so halve the budget.
    spin_ns_.store(budget / 2, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(mu_);
    cv_done_.wait(lock, done);
  }
}

}  // namespace nvfp4

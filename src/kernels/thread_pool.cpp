#include "nvfp4/thread_pool.h"

#include <algorithm>

namespace nvfp4 {

void partition(int64_t count, int parts, int index, int64_t align, int64_t& begin, int64_t& end) {
  const int64_t units = (count + align - 1) / align;
  const int64_t per = units / parts, extra = units % parts;
  const int64_t ub = index * per + std::min<int64_t>(index, extra);
  const int64_t ue = ub + per + (index < extra ? 1 : 0);
  begin = std::min(count, ub * align);
  end = std::min(count, ue * align);
}

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t count, align;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      count = count_;
      align = align_;
    }
    int64_t b, e;
    partition(count, threads_, index, align, b, e);
    if (b < e) (*job)(b, e);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) cv_done_.notify_one();
    }
  }
}

void ThreadPool::run(int64_t count, const std::function<void(int64_t, int64_t)>& fn, int64_t align) {
  if (threads_ == 1 || count <= align) {
    if (count > 0) fn(0, count);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    count_ = count;
    align_ = std::max<int64_t>(1, align);
    pending_ = threads_ - 1;
    ++generation_;
  }
  cv_start_.notify_all();
  int64_t b, e;
  partition(count, threads_, 0, std::max<int64_t>(1, align), b, e);
  if (b < e) fn(b, e);
  std::unique_lock<std::mutex> lock(mu_);
  cv_done_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace nvfp4

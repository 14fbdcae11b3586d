// bench_experts.h: the expert store's figures in `bench model`.
#include "cli/bench_experts.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>

namespace nvfp4::cli {

ExpertStats experts_delta(const ExpertStats& a, const ExpertStats& b) {
  ExpertStats d = b;
  d.hits -= a.hits;
  d.misses -= a.misses;
  d.prefetched -= a.prefetched;
  d.prefetch_used -= a.prefetch_used;
  d.bytes_read -= a.bytes_read;
  d.read_s -= a.read_s;
  return d;
}

double disk_read_gbps(const std::string& path, int64_t bytes) {
  constexpr int64_t kPiece = int64_t{4} << 20;
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  void* raw = nullptr;
  if (posix_memalign(&raw, 4096, static_cast<size_t>(kPiece)) != 0) {
    ::close(fd);
    return 0;
  }
  std::unique_ptr<void, decltype(&std::free)> buf(raw, &std::free);
  const auto t0 = std::chrono::steady_clock::now();
  int64_t got = 0;
  while (got < bytes) {
    const ssize_t r = ::pread(fd, buf.get(), static_cast<size_t>(kPiece), got);
    if (r <= 0) break;
    got += r;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  return got > 0 && s > 0 ? static_cast<double>(got) / s / 1e9 : 0;
}

nlohmann::json experts_part_json(const ExpertStats& d, int64_t tokens, double seconds) {
  const double asked = static_cast<double>(d.hits + d.misses), t = static_cast<double>(std::max<int64_t>(tokens, 1));
  return {{"hits", d.hits},
          {"misses", d.misses},
          {"prefetched", d.prefetched},
          {"prefetch_used", d.prefetch_used},
          {"hit_rate", asked > 0 ? static_cast<double>(d.hits) / asked : 0.0},
          {"disk_mb_per_token", static_cast<double>(d.bytes_read) / t / 1e6},
          {"read_s", d.read_s},
          {"read_share", seconds > 0 ? d.read_s / seconds : 0.0}};
}

}  // namespace nvfp4::cli

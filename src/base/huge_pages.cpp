// huge_alloc / huge_free (include/nvfp4/huge_pages.h): a large block is mapped with 2 MiB of slack,
// the unaligned head and the tail beyond the page-rounded size are unmapped again, and what is
// left is advised. Small blocks: aligned operator new (64 bytes, for the kernels' vector loads).
// HugeArena: a bump pointer through stretches of reserved address space, opened 2 MiB at a time.
#include "nvfp4/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <new>

namespace nvfp4 {
namespace {

constexpr size_t kSmallAlign = 64;
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
size_t mapped_size(size_t n) { return round_up(n, static_cast<size_t>(sysconf(_SC_PAGESIZE))); }

}  // namespace

void* huge_alloc(size_t n, bool huge) {
  if (n == 0) n = 1;
  if (n < kHugeMin) return ::operator new(n, std::align_val_t{kSmallAlign});
  const size_t size = mapped_size(n), span = size + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t lo = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t p = round_up(lo, kHugePage);
  if (p > lo) ::munmap(raw, p - lo);
  const uintptr_t end = p + size, raw_end = lo + span;
  if (raw_end > end) ::munmap(reinterpret_cast<void*>(end), raw_end - end);
  // The advice is a hint: a kernel without THP refuses it and the block stays 4 KiB pages.
  ::madvise(reinterpret_cast<void*>(p), size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return reinterpret_cast<void*>(p);
}

void huge_free(void* p, size_t n) noexcept {
  if (!p) return;
  if (n == 0) n = 1;
  if (n < kHugeMin) {
    ::operator delete(p, std::align_val_t{kSmallAlign});
    return;
  }
  ::munmap(p, mapped_size(n));
}

HugeArena::~HugeArena() {
  for (const Stretch& s : stretches_) ::munmap(s.p, s.reserved);
}

namespace {

// size bytes of address space at a 2 MiB boundary, without access or commit charge; nullptr
// where the system refuses.
uint8_t* reserve_stretch(size_t size) {
  const size_t span = size + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(raw), p = round_up(lo, kHugePage);
  if (p > lo) ::munmap(raw, p - lo);
  if (lo + span > p + size) ::munmap(reinterpret_cast<void*>(p + size), lo + span - (p + size));
  return reinterpret_cast<uint8_t*>(p);
}

}  // namespace

void* HugeArena::take(size_t n) {
  n = round_up(n == 0 ? 1 : n, kSmallAlign);
  const std::lock_guard<std::mutex> lock(mu_);
  if (stretches_.empty() || stretches_.back().reserved - stretches_.back().used < n) {
    const size_t need = round_up(n, kHugePage);
    size_t size = std::max(round_up(reserve_, kHugePage), need);
    uint8_t* p = reserve_stretch(size);
    while (!p && size > need) {
      size = std::max(need, round_up(size / 2, kHugePage));
      p = reserve_stretch(size);
    }
    if (!p) throw std::bad_alloc();
    stretches_.push_back({p, size, 0, 0});
  }
  Stretch& s = stretches_.back();
  uint8_t* block = s.p + s.used;
  s.used += n;
  if (s.used > s.opened) {
    const size_t to = round_up(s.used, kHugePage);
    if (::mprotect(s.p + s.opened, to - s.opened, PROT_READ | PROT_WRITE) != 0) {
      s.used -= n;
      throw std::bad_alloc();
    }
    // The advice is a hint: a kernel without THP refuses it and the pages stay 4 KiB.
    ::madvise(s.p + s.opened, to - s.opened, MADV_HUGEPAGE);
    s.opened = to;
  }
  return block;
}

size_t HugeArena::mapped() const {
  const std::lock_guard<std::mutex> lock(mu_);
  size_t t = 0;
  for (const Stretch& s : stretches_) t += s.opened;
  return t;
}

size_t HugeArena::stretches() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return stretches_.size();
}

size_t huge_resident_bytes(const void* p, size_t n) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + n;
  char line[512];
  bool in = false;
  size_t total = 0;
  while (std::fgets(line, sizeof(line), f)) {
    unsigned long a = 0, b = 0;
    if (std::sscanf(line, "%lx-%lx ", &a, &b) == 2) {  // a mapping's header line
      in = a < hi && b > lo;
      continue;
    }
    size_t kb = 0;
    if (in && std::sscanf(line, "AnonHugePages: %zu kB", &kb) == 1) total += kb * 1024;
  }
  std::fclose(f);
  return total;
}

size_t huge_resident_process() {
  FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof(line), f))
    if (std::sscanf(line, "AnonHugePages: %zu kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}

std::string thp_mode() {
  FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return "";
  char line[256] = {0};
  const bool ok = std::fgets(line, sizeof(line), f) != nullptr;
  std::fclose(f);
  if (!ok) return "";
  const std::string s(line);
  const size_t a = s.find('['), b = s.find(']');
  return a == std::string::npos || b == std::string::npos || b < a ? "" : s.substr(a + 1, b - a - 1);
}

}  // namespace nvfp4

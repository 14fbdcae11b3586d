// Memory for the large buffers that every token streams again (packed weights, the head, the KV
// cache). Each allocation of at least kHugeMin bytes is its own anonymous mapping aligned to 2 MiB
// and advised MADV_HUGEPAGE, so that where the kernel's transparent huge pages are "madvise" or
// "always" it is backed by 2 MiB pages. Streaming through 4 KiB pages costs a page walk every 4 KiB
// (under a hypervisor, a nested one): on the machine of docs/BENCHMARKS.md section 12 one thread
// read 12.7 GB/s through 4 KiB pages and 19.7 GB/s through 2 MiB ones. Where the kernel refuses the
// advice (huge pages "never", no THP), the mapping is ordinary 4 KiB pages; nothing else changes.
// Smaller allocations go to operator new, or, through a HugeArena, share huge pages with the
// other small weights of a model (SmolLM2's layers are 0.3-0.9 MiB each, a MoE's experts 1 MiB).
// The placement of bytes never changes a result.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nvfp4 {

inline constexpr size_t kHugePage = size_t{2} << 20;
inline constexpr size_t kHugeMin = kHugePage;  // a smaller block could not hold a whole huge page

// Raw interface: n bytes, 64-byte aligned at least (2 MiB when n >= kHugeMin, mapped on its own,
// released with huge_free(p, n)). huge = false maps 4 KiB pages (MADV_NOHUGEPAGE), for benchmarks
// that compare the two. Throws std::bad_alloc.
void* huge_alloc(size_t n, bool huge = true);
void huge_free(void* p, size_t n) noexcept;
// Bytes of [p, p + n) the kernel backs with huge pages now (from /proc/self/smaps; 0 if unknown).
size_t huge_resident_bytes(const void* p, size_t n);
// The whole process's AnonHugePages (/proc/self/smaps_rollup), and the kernel's THP mode
// ("always", "madvise", "never"; "" where the kernel has none): for the load log.
size_t huge_resident_process();
std::string thp_mode();

// Bump allocation for one model's weights: every block, small or large, is carved back to back
// (64-byte aligned) from one reserved stretch of address space, so the model's packed weights are
// one run of 2 MiB pages with a single partial page at its end. (Each large block as a mapping of
// its own left the part past its last 2 MiB boundary on 4 KiB pages: 1 MiB of each 9 MiB MLP
// matrix of the Llama-1B shape, 7% of its weights, which streamed slower; BENCHMARKS 17.)
// The stretch is reserved without access and without commit charge (PROT_NONE, MAP_NORESERVE)
// and opened 2 MiB at a time (read/write, advised MADV_HUGEPAGE) as blocks reach it: only what a
// block covers is ever committed or resident. A block past the stretch's end starts a new stretch
// of max(reserve, its size); where the system refuses the reservation, smaller ones are tried
// down to the block's own size. Nothing is freed before the arena is.
class HugeArena {
 public:
  explicit HugeArena(size_t reserve = size_t{64} << 30) : reserve_(reserve) {}
  ~HugeArena();
  HugeArena(const HugeArena&) = delete;
  HugeArena& operator=(const HugeArena&) = delete;
  void* take(size_t n);
  size_t mapped() const;  // bytes opened so far (whole 2 MiB pages), over every stretch
  size_t stretches() const;

 private:
  struct Stretch {
    uint8_t* p;
    size_t reserved, opened, used;
  };
  mutable std::mutex mu_;
  std::vector<Stretch> stretches_;
  size_t reserve_;
};

// huge = false: 4 KiB pages. arena: allocate from it (deallocate is then a no-op; the memory goes
// with the arena, which every allocator copy keeps alive). A container's allocator travels with its
// buffer on move, copy-assignment and swap, so a block is always released by the kind that made it.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  bool huge = true;
  std::shared_ptr<HugeArena> arena;
  // Elements a container makes without a value (vector(n, alloc), resize(n)) are
  // default-initialized, not zeroed: for a buffer its owner writes in full (the packed weight
  // stream, whose pages are then first touched by the threads that pack it).
  bool no_init = false;
  HugePageAllocator() = default;
  explicit HugePageAllocator(bool h) : huge(h) {}
  explicit HugePageAllocator(std::shared_ptr<HugeArena> a) : arena(std::move(a)) {}
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>& o) : huge(o.huge), arena(o.arena), no_init(o.no_init) {}  // NOLINT(google-explicit-constructor)
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  void construct(U* p) {
    if (no_init) ::new (static_cast<void*>(p)) U;
    else ::new (static_cast<void*>(p)) U();
  }
  T* allocate(size_t n) {
    return static_cast<T*>(arena ? arena->take(n * sizeof(T)) : huge_alloc(n * sizeof(T), huge));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (!arena) huge_free(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>& o) const { return arena == o.arena; }
};

template <class T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace nvfp4

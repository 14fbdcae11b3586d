// huge_alloc and HugeVector (include/nvfp4/huge_pages.h): large blocks are 2 MiB-aligned mappings
// of their own, advised as huge pages, which the kernel backs with 2 MiB pages where its
// transparent huge pages are "madvise" or "always"; small ones come from operator new, 64-byte
// aligned; the vector behaves as any std::vector.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "nvfp4/huge_pages.h"

using namespace nvfp4;

TEST(HugePages, LargeBlocksAreAlignedMappingsAndSmallOnesAreAligned) {
  for (size_t n : {size_t{1}, size_t{100}, size_t{4096}, kHugeMin - 1, kHugeMin, size_t{3} << 20, (size_t{5} << 20) + 17}) {
    auto* p = static_cast<uint8_t*>(huge_alloc(n));
    const auto a = reinterpret_cast<uintptr_t>(p);
    EXPECT_EQ(a % 64, 0u) << n;
    if (n >= kHugeMin) {
      EXPECT_EQ(a % kHugePage, 0u) << n;
    }
    p[n - 1] = 2;  // every byte of the block is ours
    p[0] = 1;
    EXPECT_EQ(p[0] + p[n - 1], n == 1 ? 2 : 3);
    huge_free(p, n);
  }
  huge_free(nullptr, 0);
}

TEST(HugePages, HugeVectorIsAVector) {
  HugeVector<uint32_t> v(size_t{3} << 20, 7u);  // 12 MiB
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), uint64_t{0}), (uint64_t{3} << 20) * 7);
  HugeVector<uint32_t> c = v;
  c.back() = 8;
  EXPECT_EQ(v.back(), 7u);
  HugeVector<uint32_t> m = std::move(c);
  EXPECT_EQ(m.back(), 8u);
  m.resize(10);
  m.shrink_to_fit();
  EXPECT_EQ(m.size(), 10u);
  v.assign(5, 1u);
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0u), 5u);
}

TEST(HugePages, TheKernelBacksAdvisedBlocksWithHugePages) {
  const std::string mode = thp_mode();
  if (mode != "madvise" && mode != "always") GTEST_SKIP() << "transparent huge pages: " << (mode.empty() ? "absent" : mode);
  const size_t n = size_t{16} << 20;
  HugeVector<uint8_t> huge(n, 1);
  HugeVector<uint8_t> small(n, 1, HugePageAllocator<uint8_t>(false));
  // The kernel may be short of free 2 MiB frames; one of eight is enough to show the advice took.
  EXPECT_GE(huge_resident_bytes(huge.data(), n), kHugePage);
  EXPECT_GE(huge_resident_process(), huge_resident_bytes(huge.data(), n));
  if (mode == "madvise") {
    EXPECT_EQ(huge_resident_bytes(small.data(), n), 0u);
  }
}

TEST(HugePages, AnArenaPacksSmallBlocksIntoSharedSlabs) {
  auto arena = std::make_shared<HugeArena>(size_t{4} << 20);
  std::vector<uint8_t*> small;
  for (size_t n : {size_t{100}, size_t{64}, size_t{1} << 20, size_t{3}, size_t{500000}}) {
    auto* p = static_cast<uint8_t*>(arena->take(n));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    for (uint8_t* q : small) EXPECT_NE(p, q);
    p[0] = 1;
    p[n - 1] = 1;
    small.push_back(p);
  }
  EXPECT_EQ(arena->mapped(), size_t{4} << 20);  // all five in the first slab
  arena->take(size_t{1} << 20);
  arena->take(size_t{1} << 20);  // 3.6 MiB of the slab's 4 taken
  EXPECT_EQ(arena->mapped(), size_t{4} << 20);
  arena->take(size_t{1} << 20);  // no longer fits: a second slab
  EXPECT_EQ(arena->mapped(), size_t{8} << 20);
  auto* big = static_cast<uint8_t*>(arena->take(size_t{5} << 20));  // over a quarter slab: its own block
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % kHugePage, 0u);
  EXPECT_EQ(arena->mapped(), size_t{13} << 20);
  big[(size_t{5} << 20) - 1] = 7;
}

TEST(HugePages, ABufferTravelsWithTheAllocatorThatMadeIt) {
  HugeVector<uint8_t> own(size_t{3} << 20, 1);
  {
    auto arena = std::make_shared<HugeArena>();
    HugeVector<uint8_t> in_arena(1000, 2, HugePageAllocator<uint8_t>(arena));
    own = std::move(in_arena);  // own now frees nothing of the arena's: its allocator came along
    EXPECT_EQ(own.get_allocator().arena, arena);
  }                              // the arena lives on in own's allocator
  EXPECT_EQ(own.size(), 1000u);
  EXPECT_EQ(own[999], 2);
  HugeVector<uint8_t> copy = own;  // a copy allocates where its source did
  EXPECT_EQ(copy.get_allocator().arena, own.get_allocator().arena);
  own = HugeVector<uint8_t>(size_t{3} << 20, 3);
  EXPECT_EQ(own.get_allocator().arena, nullptr);
  EXPECT_EQ(copy[0], 2);
}

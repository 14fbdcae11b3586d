// huge_alloc and HugeVector (include/nvfp4/huge_pages.h): large blocks are 2 MiB-aligned mappings
// of their own, advised as huge pages, which the kernel backs with 2 MiB pages where its
// transparent huge pages are "madvise" or "always"; small ones come from operator new, 64-byte
// aligned; the vector behaves as any std::vector. A HugeArena carves a model's blocks back to
// back from reserved address space, opening it 2 MiB at a time.
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

TEST(HugePages, AnArenaCarvesEveryBlockBackToBack) {
  auto arena = std::make_shared<HugeArena>(size_t{8} << 20);  // stretches of 8 MiB
  EXPECT_EQ(arena->mapped(), 0u);
  uint8_t* next = nullptr;
  size_t used = 0;
  for (size_t n : {size_t{100}, size_t{64}, size_t{1} << 20, size_t{3}, size_t{500000}, size_t{5} << 20}) {
    auto* p = static_cast<uint8_t*>(arena->take(n));
    if (next) {
      EXPECT_EQ(p, next) << n;  // right after the previous block, large ones too
    } else {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePage, 0u);
    }
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    p[0] = 1;
    p[n - 1] = 1;  // opened: readable and writable to the last byte
    const size_t taken = (n + 63) / 64 * 64;
    next = p + taken;
    used += taken;
    EXPECT_EQ(arena->mapped(), (used + kHugePage - 1) / kHugePage * kHugePage) << n;  // whole 2 MiB pages
  }
  EXPECT_EQ(arena->stretches(), 1u);
  auto* q = static_cast<uint8_t*>(arena->take(size_t{2} << 20));  // 6.5 + 2 MiB: past the stretch
  EXPECT_EQ(arena->stretches(), 2u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % kHugePage, 0u);
  EXPECT_EQ(arena->mapped(), size_t{10} << 20);
  q[(size_t{2} << 20) - 1] = 3;
  auto* big = static_cast<uint8_t*>(arena->take(size_t{20} << 20));  // larger than a stretch: one its size
  EXPECT_EQ(arena->stretches(), 3u);
  EXPECT_EQ(arena->mapped(), size_t{30} << 20);
  big[(size_t{20} << 20) - 1] = 7;
  EXPECT_EQ(big[(size_t{20} << 20) - 1] + q[(size_t{2} << 20) - 1], 10);
}

TEST(HugePages, AnArenaReservesAddressSpaceNotMemory) {
  // The default stretch is 64 GiB of address space; taking a little opens 2 MiB of it.
  auto arena = std::make_shared<HugeArena>();
  auto* p = static_cast<uint8_t*>(arena->take(4096));
  p[4095] = 1;
  EXPECT_EQ(arena->mapped(), kHugePage);
  std::vector<std::shared_ptr<HugeArena>> many;  // many models at once (tests, a draft model)
  for (int i = 0; i < 16; ++i) {
    many.push_back(std::make_shared<HugeArena>());
    static_cast<uint8_t*>(many.back()->take(64))[0] = 1;
  }
  EXPECT_EQ(many.back()->mapped(), kHugePage);
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

// How much memory this process may still take: the kernel's MemAvailable (free memory plus the page
// cache it can reclaim), and, inside a memory cgroup (v1 memory.limit_in_bytes, v2 memory.max), the
// limit less this process's resident set. `--experts-budget auto` sizes the expert store by it.
#pragma once
#include <cstdint>
#include <string>

namespace nvfp4 {

struct MemoryInfo {
  int64_t mem_available = -1;  // /proc/meminfo MemAvailable, bytes; -1: unknown
  int64_t cgroup_limit = -1;   // the memory cgroup's limit, bytes; -1: none (or unlimited)
  int64_t resident = 0;        // this process's VmRSS, bytes
  // min(mem_available, cgroup_limit - resident), at least 0; -1 when neither is known.
  int64_t available() const;
  std::string describe() const;  // "MemAvailable 20.1 GiB, cgroup limit 8.0 GiB, resident 1.2 GiB"
};

MemoryInfo memory_info();

}  // namespace nvfp4

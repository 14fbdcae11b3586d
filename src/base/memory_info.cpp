// memory_info(): /proc/meminfo, /proc/self/cgroup and the cgroup's limit file, /proc/self/status.
#include "nvfp4/memory_info.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace nvfp4 {

namespace {
// The "Key:   123 kB" line of a /proc file, in bytes; -1 when absent.
int64_t proc_kb(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() && line[key.size()] == ':') {
      std::istringstream s(line.substr(key.size() + 1));
      int64_t kb = -1;
      s >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
  return -1;
}

int64_t read_limit(const std::string& file) {
  std::ifstream in(file);
  std::string v;
  if (!(in >> v) || v == "max") return -1;
  try {
    const long long b = std::stoll(v);
    return b <= 0 || b >= (int64_t{1} << 60) ? -1 : static_cast<int64_t>(b);  // v1's "unlimited" is near 2^63
  } catch (...) {
    return -1;
  }
}

int64_t cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  int64_t limit = -1;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string ctl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    int64_t l = -1;
    if (ctl == "memory" || ctl.find("memory") != std::string::npos) l = read_limit("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
    else if (ctl.empty()) l = read_limit("/sys/fs/cgroup" + path + "/memory.max");
    if (l > 0) limit = limit < 0 ? l : std::min(limit, l);
  }
  return limit;
}

std::string gib(int64_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f GiB", static_cast<double>(b) / (1 << 30));
  return s;
}
}  // namespace

int64_t MemoryInfo::available() const {
  int64_t a = mem_available;
  if (cgroup_limit > 0) {
    const int64_t c = std::max<int64_t>(cgroup_limit - resident, 0);
    a = a < 0 ? c : std::min(a, c);
  }
  return a;
}

std::string MemoryInfo::describe() const {
  std::string s = "MemAvailable " + (mem_available < 0 ? std::string("unknown") : gib(mem_available));
  if (cgroup_limit > 0) s += ", cgroup limit " + gib(cgroup_limit);
  return s + ", resident " + gib(resident);
}

MemoryInfo memory_info() {
  MemoryInfo m;
  m.mem_available = proc_kb("/proc/meminfo", "MemAvailable");
  m.cgroup_limit = cgroup_limit();
  m.resident = std::max<int64_t>(proc_kb("/proc/self/status", "VmRSS"), 0);
  return m;
}

}  // namespace nvfp4

// Checked access to generated fixtures: every array is listed in a manifest with its element
// count and the FNV-1a 64 hash of its bytes, so a test knows it reads what the generator wrote.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.h"

namespace nvfp4::test {

inline uint64_t fnv1a64(const void* data, size_t bytes, uint64_t h = 0xCBF29CE484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

struct ManifestEntry {
  size_t count = 0;
  uint64_t hash = 0;
};

// Lines `name count hex-hash`; '#' starts a comment line.
inline std::map<std::string, ManifestEntry> read_manifest(const std::string& rel_path) {
  std::ifstream f(fixture_path(rel_path));
  if (!f) throw std::runtime_error("missing fixture " + fixture_path(rel_path));
  std::map<std::string, ManifestEntry> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, hex;
    ManifestEntry e;
    if (!(ls >> name >> e.count >> hex)) throw std::runtime_error("bad manifest line: " + line);
    e.hash = std::stoull(hex, nullptr, 16);
    out[name] = e;
  }
  return out;
}

// Throws unless `v` has the count and hash that the manifest lists under `key`.
template <typename T>
void check_against_manifest(const std::map<std::string, ManifestEntry>& m, const std::string& key,
                            const std::vector<T>& v) {
  const auto it = m.find(key);
  if (it == m.end()) throw std::runtime_error("manifest has no entry " + key);
  if (it->second.count != v.size())
    throw std::runtime_error(key + ": count " + std::to_string(v.size()) + ", manifest says " +
                             std::to_string(it->second.count));
  if (fnv1a64(v.data(), v.size() * sizeof(T)) != it->second.hash)
    throw std::runtime_error(key + ": bytes differ from the generator's (hash mismatch)");
}

}  // namespace nvfp4::test

// Helpers shared by the tests: a deterministic generator and fixture file access.
#pragma once
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace nvfp4::test {

// splitmix64: tiny, deterministic on every platform, and easy to reproduce in Python.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1) with 24 random bits.
  float uniform() { return static_cast<float>(static_cast<int64_t>(next() >> 40) - (1 << 23)) * 0x1p-23f; }
  // Approximately normal (sum of 4 uniforms), deterministic.
  float gauss() { return (uniform() + uniform() + uniform() + uniform()) * 0.8660254f; }
};

inline std::string fixture_path(const std::string& name) { return std::string(NVFP4_FIXTURES) + "/" + name; }

template <typename T>
std::vector<T> read_fixture(const std::string& name) {
  std::ifstream f(fixture_path(name), std::ios::binary);
  if (!f) throw std::runtime_error("missing fixture " + fixture_path(name));
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (raw.size() % sizeof(T) != 0) throw std::runtime_error("fixture size " + name);
  std::vector<T> out(raw.size() / sizeof(T));
  std::copy(raw.begin(), raw.end(), reinterpret_cast<char*>(out.data()));
  return out;
}

}  // namespace nvfp4::test

// Rebuilds the input tensors of fixtures/modelopt/cases.txt bit for bit, from the recipes that
// tools/gen_modelopt_fixtures.py documents (its docstring is the specification; keep both in step).
// Only integer arithmetic and exact float steps are used, so every platform gets the same floats.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "nvfp4/codec.h"
#include "test_util.h"

namespace nvfp4::test {

struct ModeloptCase {
  std::string name, kind;
  uint64_t seed = 0;
  int64_t n_out = 0, n_in = 0, p1 = 0, p2 = 0;
  uint64_t input_hash = 0;
  uint32_t scale2_bits = 0;
  std::string expect;  // match | spec_zero | refuse
  int64_t sub_blocks = 0;
  bool has_given_s2 = false;  // scale2 passed in (w4a4 activation path), not amax / 2688
  uint32_t given_s2_bits = 0;
};

struct ModeloptFixture {
  std::vector<ModeloptCase> cases;
  size_t outputs_size = 0;
  uint64_t outputs_hash = 0;
};

inline ModeloptFixture read_modelopt_cases() {
  std::ifstream f(fixture_path("modelopt/cases.txt"));
  if (!f) throw std::runtime_error("missing fixture modelopt/cases.txt");
  ModeloptFixture fx;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    if (line.rfind("#outputs ", 0) == 0) {
      std::string tag, hex;
      ls >> tag >> fx.outputs_size >> hex;
      fx.outputs_hash = std::stoull(hex, nullptr, 16);
      continue;
    }
    if (line[0] == '#') continue;
    ModeloptCase c;
    std::string hash_hex, s2_hex, given_hex;
    if (!(ls >> c.name >> c.kind >> c.seed >> c.n_out >> c.n_in >> c.p1 >> c.p2 >> hash_hex >>
          s2_hex >> c.expect >> c.sub_blocks >> given_hex))
      throw std::runtime_error("bad cases.txt line: " + line);
    c.has_given_s2 = given_hex != "-";
    if (c.has_given_s2) c.given_s2_bits = static_cast<uint32_t>(std::stoul(given_hex, nullptr, 16));
    c.input_hash = std::stoull(hash_hex, nullptr, 16);
    c.scale2_bits = static_cast<uint32_t>(std::stoul(s2_hex, nullptr, 16));
    fx.cases.push_back(c);
  }
  return fx;
}

namespace detail {

// Sum of four centred 22-bit uniforms: an exact integer with |g| < 2^23.
inline int64_t gauss_int(Rng& r) {
  int64_t g = 0;
  for (int k = 0; k < 4; ++k) g += static_cast<int64_t>(r.next() >> 42) - (int64_t{1} << 21);
  return g;
}

inline float exact_ldexp(int64_t g, int64_t e) {
  return std::ldexp(static_cast<float>(g), static_cast<int>(e));
}

inline void fill_ties(Rng& r, int64_t blocks, int64_t j, float* w) {
  constexpr float kTies[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  for (int64_t b = 0; b < blocks; ++b) {
    uint64_t c[18];
    for (auto& x : c) x = r.next();
    float s;
    int unit;
    if (b == 0) {
      s = 448.0f;
      unit = 0x7E;
    } else if (c[0] % 4 == 0) {
      const int i = static_cast<int>(1 + (c[0] >> 2) % 125);
      s = static_cast<float>((static_cast<double>(e4m3_to_float(i)) + e4m3_to_float(i + 1)) / 2);
      unit = i % 2 == 0 ? i : i + 1;
    } else {
      unit = static_cast<int>(1 + (c[0] >> 2) % 126);
      s = e4m3_to_float(unit);
    }
    const int p = static_cast<int>(c[1] % 16);
    const float amax = std::ldexp(6.0f * s, static_cast<int>(j));
    float* blk = w + b * 16;
    blk[p] = ((c[1] >> 4) & 1) ? -amax : amax;
    const float step = e4m3_to_float(unit);
    for (int i = 0; i < 16; ++i) {
      if (i == p) continue;
      const uint64_t ci = c[2 + i];
      float x = std::ldexp(kTies[ci % 7] * step, static_cast<int>(j));
      const uint64_t var = (ci >> 8) % 4;
      if (var == 2) x = std::nextafter(x, 0.0f);
      if (var == 3) x = std::nextafter(x, INFINITY);
      blk[i] = ((ci >> 16) & 1) ? -x : x;
    }
  }
}

}  // namespace detail

inline std::vector<float> make_modelopt_input(const ModeloptCase& c) {
  using detail::exact_ldexp;
  using detail::gauss_int;
  const int64_t n = c.n_out * c.n_in, blocks = n / 16;
  std::vector<float> w(static_cast<size_t>(n));
  Rng r(c.seed);
  if (c.kind == "gauss") {
    for (auto& v : w) v = exact_ldexp(gauss_int(r), c.p1);
  } else if (c.kind == "outlier") {
    for (auto& v : w) {
      v = exact_ldexp(gauss_int(r), c.p1);
      const uint64_t x = r.next();
      if ((x & 255) == 0) v = std::ldexp(v, static_cast<int>(4 + (x >> 8) % c.p2));
    }
  } else if (c.kind == "range") {
    const uint64_t span = static_cast<uint64_t>(c.p2 - c.p1 + 1);
    for (int64_t b = 0; b < blocks; ++b) {
      const uint64_t x = r.next();
      const int64_t e = c.p1 + static_cast<int64_t>((x >> 8) % span);
      for (int i = 0; i < 16; ++i) {
        const float v = exact_ldexp(gauss_int(r), e - 23);
        w[b * 16 + i] = (x & 7) == 0 ? 0.0f : v;
      }
    }
  } else if (c.kind == "zeros") {
    for (int64_t b = 0; b < blocks; ++b) {
      const uint64_t x = r.next();
      const uint64_t mode = x & 3, pos = (x >> 8) % 16;
      const float zero = ((x >> 16) & 1) ? -0.0f : 0.0f;
      for (uint64_t i = 0; i < 16; ++i) {
        const float v = exact_ldexp(gauss_int(r), c.p1);
        const bool keep = mode == 0 ? false : mode == 1 ? i == pos : true;
        w[b * 16 + i] = keep ? v : zero;
      }
    }
  } else if (c.kind == "bits") {
    const uint64_t span = static_cast<uint64_t>(c.p2 - c.p1 + 1);
    for (auto& v : w) {
      const uint64_t x = r.next();
      const uint64_t mag = static_cast<uint64_t>(c.p1) + (x >> 1) % span;
      v = std::bit_cast<float>(static_cast<uint32_t>(mag | ((x & 1) << 31)));
    }
  } else if (c.kind == "ties") {
    detail::fill_ties(r, blocks, c.p1, w.data());
  } else {
    throw std::runtime_error("unknown recipe kind " + c.kind);
  }
  return w;
}

}  // namespace nvfp4::test

// Building the packed weight stream (see packed.h) and the prepared activations.
#include <algorithm>
#include <cstring>

#include "kernels/packed.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"

namespace nvfp4::kern {

namespace {
// The scale summary of tile t's blocks beside the stream (see packed.h).
void summarize_tile(Packed& p, int64_t t) {
  for (int64_t b = 0; b < p.blocks; ++b) {
    const int64_t g0 = b * kBlockGroups, g1 = std::min<int64_t>(p.groups, g0 + kBlockGroups);
    int flags = 3;
    for (int r = 0; r < kTileRows; ++r) {
      int lo = 64, hi = 0;
      for (int64_t g = g0; g < g1; ++g) {
        const uint8_t v = p.tile(t)[g * kRecordBytes + 128 + r];
        if (v == 0) continue;
        lo = std::min(lo, scale_e(v));
        hi = std::max(hi, scale_e(v));
      }
      if (lo > hi) lo = hi = 0;
      p.emin[static_cast<size_t>((t * p.blocks + b) * kTileRows + r)] = static_cast<uint8_t>(lo);
      if (hi - lo > kNarrowRange) flags &= ~(1 << (r / 8));
    }
    p.narrow[static_cast<size_t>(t * p.blocks + b)] = static_cast<uint8_t>(flags);
  }
}

// Four 4-bit values (v's nibbles 0..3) to the low nibbles of four bytes (byte j = nibble j).
inline uint32_t spread_nibbles(uint32_t v) {
  v = (v | (v << 8)) & 0x00FF00FFu;
  return (v | (v << 4)) & 0x0F0F0F0Fu;
}

// A row's group g as a record wants it (packed.h): lo byte j = code(16g + j) | code(16g + 4 + j)
// << 4, hi byte j = code(16g + 8 + j) | code(16g + 12 + j) << 4, and the scale byte.
// From the row layout: 8 bytes whose nibble k (the low one first) is code(16g + k).
struct RowSource {
  const RowView& w;
  void group(int64_t row, int64_t g, uint32_t& lo, uint32_t& hi, uint8_t& scale) const {
    uint64_t x;
    std::memcpy(&x, w.row_codes(row) + 8 * g, 8);
    lo = spread_nibbles(static_cast<uint32_t>(x) & 0xFFFF) | spread_nibbles(static_cast<uint32_t>(x >> 16) & 0xFFFF) << 4;
    hi = spread_nibbles(static_cast<uint32_t>(x >> 32) & 0xFFFF) | spread_nibbles(static_cast<uint32_t>(x >> 48)) << 4;
    scale = w.row_scales(row)[g];
  }
};
// From ggml's blocks (matrix.h): group g is sub-block g % 4 of block g / 4, whose byte j of 8
// holds code j (low nibble) and code j + 8 (high), and whose scale is the block's byte g % 4.
struct GgmlSource {
  const GgmlView& w;
  void group(int64_t row, int64_t g, uint32_t& lo, uint32_t& hi, uint8_t& scale) const {
    const uint8_t* blk = w.blocks + row * w.row_bytes() + (g / 4) * kGgmlBlockBytes;
    uint32_t a, b;  // bytes 0..3 and 4..7 of the sub-block
    std::memcpy(&a, blk + 4 + 8 * (g % 4), 4);
    std::memcpy(&b, blk + 8 + 8 * (g % 4), 4);
    lo = (a & 0x0F0F0F0Fu) | (b & 0x0F0F0F0Fu) << 4;
    hi = (a >> 4 & 0x0F0F0F0Fu) | (b & 0xF0F0F0F0u);
    scale = blk[g % 4];
  }
};

// Tile t's records, every byte written (rows past n_out: zero codes and zero scales), then its
// block summary.
template <class Source>
void pack_tile(const Source& src, int64_t n_out, Packed& p, int64_t t) {
  uint8_t* base = p.bytes.data() + t * p.groups * kRecordBytes;
  for (int r = 0; r < kTileRows; ++r) {
    const int64_t row = t * kTileRows + r;
    uint8_t* out = base;
    for (int64_t g = 0; g < p.groups; ++g, out += kRecordBytes) {
      uint32_t lo = 0, hi = 0;
      uint8_t scale = 0;
      if (row < n_out) src.group(row, g, lo, hi, scale);
      std::memcpy(out + 4 * r, &lo, 4);
      std::memcpy(out + 64 + 4 * r, &hi, 4);
      out[128 + r] = scale;
    }
  }
  summarize_tile(p, t);
}

// The stream's bytes are left uninitialized (pack_tile writes each one), so that each thread's
// tiles are first touched, and their pages faulted in, by that thread.
template <class Source>
Packed pack(const Source& src, int64_t n_out, int64_t n_in, float scale2, const HugePageAllocator<uint8_t>& alloc,
            ThreadPool* pool) {
  if (n_in <= 0 || n_in % kGroup != 0 || n_out <= 0) {
    throw Error("", "NVFP4 weight shape", "NVFP4 weight shape: n_in must be a positive multiple of 16, n_out positive",
                "n_in % 16 == 0", std::to_string(n_out) + "x" + std::to_string(n_in));
  }
  Packed p;
  p.n_out = n_out;
  p.n_in = n_in;
  p.scale2 = scale2;
  p.groups = n_in / kGroup;
  p.tiles = (n_out + kTileRows - 1) / kTileRows;
  p.blocks = (p.groups + kBlockGroups - 1) / kBlockGroups;
  HugePageAllocator<uint8_t> raw = alloc;
  raw.no_init = true;
  p.bytes = HugeVector<uint8_t>(static_cast<size_t>(p.tiles * p.groups * kRecordBytes), raw);
  p.emin.assign(static_cast<size_t>(p.tiles * p.blocks * kTileRows), 0);
  p.narrow.assign(static_cast<size_t>(p.tiles * p.blocks), 0);
  const auto tiles = [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) pack_tile(src, n_out, p, t);
  };
  if (pool && pool->threads() > 1) pool->run(p.tiles, tiles);
  else tiles(0, p.tiles);
  return p;
}
}  // namespace

Packed pack_weights(const RowView& w, const HugePageAllocator<uint8_t>& alloc, ThreadPool* pool) {
  return pack(RowSource{w}, w.n_out, w.n_in, w.scale2, alloc, pool);
}

Packed pack_weights(const GgmlView& w, const HugePageAllocator<uint8_t>& alloc, ThreadPool* pool) {
  if (w.n_in % kGgmlBlock != 0)
    throw Error("", "NVFP4 weight shape", "NVFP4 weight in ggml blocks: n_in a multiple of 64", "n_in % 64 == 0",
                std::to_string(w.n_out) + "x" + std::to_string(w.n_in));
  return pack(GgmlSource{w}, w.n_out, w.n_in, w.scale, alloc, pool);
}

void unpack_tile(const Packed& p, int64_t t, RowMatrix& out) {
  out.n_out = kTileRows;
  out.n_in = p.n_in;
  out.scale2 = p.scale2;
  out.codes.assign(static_cast<size_t>(kTileRows * p.n_in / 2), 0);
  out.scales.assign(static_cast<size_t>(kTileRows * p.groups), 0);
  const uint8_t* in = p.tile(t);
  for (int64_t g = 0; g < p.groups; ++g, in += kRecordBytes) {
    for (int r = 0; r < kTileRows; ++r) {
      uint8_t* row = out.codes.data() + r * p.n_in / 2;
      auto put = [&](int64_t i, uint8_t c) {
        row[i >> 1] = static_cast<uint8_t>((i & 1) ? (row[i >> 1] | (c << 4)) : (row[i >> 1] | c));
      };
      const int64_t e = g * kGroup;
      for (int j = 0; j < 4; ++j) {
        put(e + j, in[4 * r + j] & 0xF);
        put(e + 4 + j, in[4 * r + j] >> 4);
        put(e + 8 + j, in[64 + 4 * r + j] & 0xF);
        put(e + 12 + j, in[64 + 4 * r + j] >> 4);
      }
      out.scales[r * p.groups + g] = in[128 + r];
    }
  }
}

void prepare_q8(const float* x, int64_t n, int64_t n_in, ActQ8& out) {
  out.shape(n, n_in);
  prepare_q8_cols(x, 0, n, out);
}

void prepare_q8_cols(const float* x, int64_t t0, int64_t t1, ActQ8& out) {
  const int64_t n_in = out.n_in;
  Q8Activations a;
  for (int64_t t = t0; t < t1; ++t) {
    quantize_act_q8(x + t * n_in, n_in, a);
    std::copy(a.d.begin(), a.d.end(), out.d.begin() + t * out.blocks);
    std::copy(a.zero.begin(), a.zero.end(), out.zero.begin() + t * out.blocks);
    for (int64_t g = 0; g < out.groups; ++g) {
      int32_t s = 0;
      int8_t* dst = out.qg(g, t);
      for (int j = 0; j < kGroup; ++j) {
        dst[j] = a.q[g * kGroup + j];
        s += dst[j];
      }
      out.set_corr(g, t, -12 * s);
    }
  }
}

void gather_q8_cols(const ActQ8& src, const int64_t* cols, int64_t c0, int64_t c1, ActQ8& out) {
  const size_t nb = static_cast<size_t>(out.blocks);
  for (int64_t c = c0; c < c1; ++c) {
    const int64_t s = cols[c];
    for (int64_t g = 0; g < out.groups; ++g) {
      std::copy_n(src.qg(g, s), kGroup, out.qg(g, c));
      out.set_corr(g, c, *src.corrg(g, s));  // and corr16
    }
    std::copy_n(src.d.begin() + static_cast<std::ptrdiff_t>(s * out.blocks), nb, out.d.begin() + static_cast<std::ptrdiff_t>(c * out.blocks));
    std::copy_n(src.zero.begin() + static_cast<std::ptrdiff_t>(s * out.blocks), nb, out.zero.begin() + static_cast<std::ptrdiff_t>(c * out.blocks));
  }
}

void prepare_fp4(const float* x, int64_t n, int64_t n_in, float input_scale, ActFp4& out) {
  out.n = n;
  out.n_in = n_in;
  out.groups = n_in / kGroup;
  out.input_scale = input_scale;
  out.q1.resize(static_cast<size_t>(n * n_in));
  out.corr.resize(static_cast<size_t>(n * out.groups));
  out.q9.resize(static_cast<size_t>(n * out.groups));
  Fp4Activations a;
  for (int64_t t = 0; t < n; ++t) {
    quantize_act_fp4(x + t * n_in, n_in, input_scale, a);
    for (int64_t g = 0; g < out.groups; ++g) {
      int8_t* q1 = out.q1.data() + (g * n + t) * kGroup;
      int32_t s = 0;
      for (int j = 0; j < kGroup; ++j) {
        const int64_t i = g * kGroup + j;
        q1[j] = static_cast<int8_t>(e2m1_q1((i & 1) ? (a.codes[i >> 1] >> 4) : (a.codes[i >> 1] & 0xF)));
        s += q1[j];
      }
      out.corr[g * n + t] = -12 * s;
      out.q9[g * n + t] = e4m3_q9(a.scales[g]);
    }
  }
}

}  // namespace nvfp4::kern

// Building the packed weight stream (see packed.h) and the prepared activations.
#include <algorithm>

#include "kernels/packed.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"

namespace nvfp4::kern {

namespace {
// The per-block scale summary beside the stream (see packed.h).
void summarize_blocks(Packed& p) {
  p.blocks = (p.groups + kBlockGroups - 1) / kBlockGroups;
  p.emin.assign(static_cast<size_t>(p.tiles * p.blocks * kTileRows), 0);
  p.narrow.assign(static_cast<size_t>(p.tiles * p.blocks), 0);
  for (int64_t t = 0; t < p.tiles; ++t) {
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
}
}  // namespace

Packed pack_weights(const RowView& w, const HugePageAllocator<uint8_t>& alloc) {
  if (w.n_in <= 0 || w.n_in % kGroup != 0 || w.n_out <= 0) {
    throw Error("", "NVFP4 weight shape", "NVFP4 weight shape: n_in must be a positive multiple of 16, n_out positive",
                "n_in % 16 == 0", std::to_string(w.n_out) + "x" + std::to_string(w.n_in));
  }
  Packed p;
  p.n_out = w.n_out;
  p.n_in = w.n_in;
  p.scale2 = w.scale2;
  p.groups = w.n_in / kGroup;
  p.tiles = (w.n_out + kTileRows - 1) / kTileRows;
  p.bytes = HugeVector<uint8_t>(static_cast<size_t>(p.tiles * p.groups * kRecordBytes), 0, alloc);
  for (int64_t t = 0; t < p.tiles; ++t) {
    uint8_t* out = p.bytes.data() + t * p.groups * kRecordBytes;
    for (int64_t g = 0; g < p.groups; ++g, out += kRecordBytes) {
      for (int r = 0; r < kTileRows; ++r) {
        const int64_t row = t * kTileRows + r;
        if (row >= w.n_out) continue;  // padding stays 0: code 0 (value 0), scale 0
        const int64_t e = g * kGroup;
        for (int j = 0; j < 4; ++j) {
          out[4 * r + j] = static_cast<uint8_t>(w.code(row, e + j) | (w.code(row, e + 4 + j) << 4));
          out[64 + 4 * r + j] =
              static_cast<uint8_t>(w.code(row, e + 8 + j) | (w.code(row, e + 12 + j) << 4));
        }
        out[128 + r] = w.row_scales(row)[g];
      }
    }
  }
  summarize_blocks(p);
  return p;
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

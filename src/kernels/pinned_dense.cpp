#include "kernels/pinned_dense.h"

#include <algorithm>
#include <cstring>

#include "nvfp4/error.h"

#include "nvfp4/codec.h"
#include "kernels/packed.h"
#include "nvfp4/kernels.h"

namespace nvfp4 {

namespace pinned_dense_detail {
// The reference order (see pinned_dense.h), one element at a time.
void rows_scalar(const void* w, int elem, int64_t n_in, int64_t n_out, const float* x, int64_t n,
                 float* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * n_in;
      float acc[16] = {};
      for (int64_t i = 0; i < n_in; ++i) {
        const int64_t k = tiled_at(r, i, n_in);
        const float wv = elem == kF16    ? half_to_float(static_cast<const uint16_t*>(w)[k])
                         : elem == kBF16 ? bf16_to_float(static_cast<const uint16_t*>(w)[k])
                                         : static_cast<const float*>(w)[k];
        const float p = wv * xt[i];
        acc[i & 15] = acc[i & 15] + p;
      }
      for (int h = 8; h >= 1; h >>= 1)
        for (int l = 0; l < h; ++l) acc[l] = acc[l] + acc[l + h];
      y[t * n_out + r] = acc[0];
    }
  }
}
}  // namespace pinned_dense_detail

namespace {
// Row-major src [n_out][n_in] into the tiled layout (zeros where padded), 16 inputs at a time.
template <class T>
void tile_into(HugeVector<T>& dst, const T* src, int64_t n_out, int64_t n_in) {
  using namespace pinned_dense_detail;
  dst.resize(static_cast<size_t>(padded_out(n_out) * padded_in(n_in)));
  std::memset(dst.data(), 0, dst.size() * sizeof(T));
  for (int64_t r = 0; r < n_out; ++r)
    for (int64_t i = 0; i < n_in; i += 16)
      std::memcpy(dst.data() + tiled_at(r, i, n_in), src + r * n_in + i, static_cast<size_t>(std::min<int64_t>(16, n_in - i)) * sizeof(T));
}
// The first n rows of a tiled matrix, row-major.
template <class T>
std::vector<T> untile(const HugeVector<T>& src, int64_t n, int64_t n_in) {
  std::vector<T> out(static_cast<size_t>(n * n_in));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < n_in; i += 16)
      std::memcpy(out.data() + r * n_in + i, src.data() + pinned_dense_detail::tiled_at(r, i, n_in),
                  static_cast<size_t>(std::min<int64_t>(16, n_in - i)) * sizeof(T));
  return out;
}
}  // namespace

PinnedDense PinnedDense::prepare(DType dtype, const void* w, int64_t n_out, int64_t n_in) {
  PinnedDense d;
  d.n_out_ = n_out;
  d.n_in_ = n_in;
  if (dtype == DType::e4m3)
    throw Error("", "PinnedDense dtype", "a pinned float layer's weights", "F32, F16 or BF16", "E4M3 (FP8 layers run through DenseLinear)");
  if (dtype == DType::f16 || dtype == DType::bf16) {
    d.elem_ = dtype == DType::f16 ? pinned_dense_detail::kF16 : pinned_dense_detail::kBF16;
    tile_into(d.h_, static_cast<const uint16_t*>(w), n_out, n_in);
  } else {
    tile_into(d.f_, static_cast<const float*>(w), n_out, n_in);
  }
  return d;
}

PinnedDense PinnedDense::from_f32(std::vector<float> w, int64_t n_out, int64_t n_in) {
  return prepare(DType::f32, w.data(), n_out, n_in);
}

PinnedDense PinnedDense::prefix(int64_t n) const {
  if (elem_ == pinned_dense_detail::kF32) return prepare(DType::f32, untile(f_, n, n_in_).data(), n, n_in_);
  return prepare(is_f16() ? DType::f16 : DType::bf16, untile(h_, n, n_in_).data(), n, n_in_);
}

void PinnedDense::row(int64_t r, float* out) const {
  using pinned_dense_detail::tiled_at;
  for (int64_t i = 0; i < n_in_; i += 16) {
    const int64_t k = tiled_at(r, i, n_in_), m = std::min<int64_t>(16, n_in_ - i);
    for (int64_t j = 0; j < m; ++j) {
      const size_t at = static_cast<size_t>(k + j);
      out[i + j] = is_f16() ? half_to_float(h_[at]) : is_bf16() ? bf16_to_float(h_[at]) : f_[at];
    }
  }
}

std::string PinnedDense::kernel_name() const {
  const std::string n = kern::table(active_isa()).pinned_name;  // "gemv_pinned16_<isa>"
  return n.substr(0, 14) + (is_f16() ? "f16_" : is_bf16() ? "bf16_" : "f32_") + n.substr(14);
}

void PinnedDense::forward(const float* x, int64_t n, float* y, ThreadPool& pool) const {
  using namespace pinned_dense_detail;
  const kern::PinnedRowsFn fn = kern::table(active_isa()).pinned_rows;
  const void* w = elem_ == kF32 ? static_cast<const void*>(f_.data()) : static_cast<const void*>(h_.data());
  pool.run(n_out_, [&](int64_t b, int64_t e) { fn(w, elem_, n_in_, n_out_, x, n, y, b, e); }, 8);
}

}  // namespace nvfp4

#include "kernels/pinned_dense.h"

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
        const int64_t k = r * n_in + i;
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

PinnedDense PinnedDense::prepare(DType dtype, const void* w, int64_t n_out, int64_t n_in) {
  PinnedDense d;
  d.n_out_ = n_out;
  d.n_in_ = n_in;
  const size_t count = static_cast<size_t>(n_out * n_in);
  if (dtype == DType::e4m3)
    throw Error("", "PinnedDense dtype", "a pinned float layer's weights", "F32, F16 or BF16", "E4M3 (FP8 layers run through DenseLinear)");
  if (dtype == DType::f16 || dtype == DType::bf16) {
    d.elem_ = dtype == DType::f16 ? pinned_dense_detail::kF16 : pinned_dense_detail::kBF16;
    d.h_.resize(count);
    std::memcpy(d.h_.data(), w, count * 2);
  } else {
    d.f_.resize(count);
    std::memcpy(d.f_.data(), w, count * 4);
  }
  return d;
}

PinnedDense PinnedDense::from_f32(std::vector<float> w, int64_t n_out, int64_t n_in) {
  PinnedDense d;
  d.n_out_ = n_out;
  d.n_in_ = n_in;
  d.f_.assign(w.begin(), w.end());
  return d;
}

PinnedDense PinnedDense::prefix(int64_t n) const {  // the first rows are a row-major matrix of their own
  if (elem_ == pinned_dense_detail::kF32) return prepare(DType::f32, f_.data(), n, n_in_);
  return prepare(is_f16() ? DType::f16 : DType::bf16, h_.data(), n, n_in_);
}

PinnedDense PinnedDense::gather(const std::vector<int32_t>& rows) const {
  PinnedDense d;
  d.n_out_ = static_cast<int64_t>(rows.size());
  d.n_in_ = n_in_;
  d.elem_ = elem_;
  const size_t n = static_cast<size_t>(n_in_);
  for (int32_t r : rows)
    if (r < 0 || r >= n_out_) throw Error("", "PinnedDense rows", "rows of the matrix", "0 .. " + std::to_string(n_out_ - 1), std::to_string(r));
  if (elem_ == pinned_dense_detail::kF32) {
    d.f_.resize(rows.size() * n);
    for (size_t i = 0; i < rows.size(); ++i) std::memcpy(d.f_.data() + i * n, f_.data() + static_cast<size_t>(rows[i]) * n, n * 4);
  } else {
    d.h_.resize(rows.size() * n);
    for (size_t i = 0; i < rows.size(); ++i) std::memcpy(d.h_.data() + i * n, h_.data() + static_cast<size_t>(rows[i]) * n, n * 2);
  }
  return d;
}

void PinnedDense::forward_rows(const float* x, int64_t r0, int64_t r1, float* y) const {
  using namespace pinned_dense_detail;
  const void* w = elem_ == kF32 ? static_cast<const void*>(f_.data()) : static_cast<const void*>(h_.data());
  kern::table(active_isa()).pinned_rows(w, elem_, n_in_, n_out_, x, 1, y, r0, r1);
}

void PinnedDense::row(int64_t r, float* out) const {
  if (is_f16()) {
    for (int64_t i = 0; i < n_in_; ++i) out[i] = half_to_float(h_[static_cast<size_t>(r * n_in_ + i)]);
  } else if (is_bf16()) {
    for (int64_t i = 0; i < n_in_; ++i) out[i] = bf16_to_float(h_[static_cast<size_t>(r * n_in_ + i)]);
  } else {
    std::memcpy(out, f_.data() + r * n_in_, static_cast<size_t>(n_in_) * 4);
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

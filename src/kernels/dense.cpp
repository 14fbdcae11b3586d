// DenseLinear, reference version: float32 dot products over the stored dtype, rows split over the
// pool. ISA variants replace the inner loop.
#include "nvfp4/dense.h"

#include <cstring>
#include <vector>

#include "nvfp4/codec.h"

namespace nvfp4 {

struct DenseLinear::Impl {
  DType dtype;
  int64_t n_out, n_in;
  std::vector<uint8_t> bytes;
  float at(int64_t r, int64_t i) const {
    const int64_t k = r * n_in + i;
    switch (dtype) {
      case DType::f32: { float v; std::memcpy(&v, bytes.data() + 4 * k, 4); return v; }
      case DType::f16: { uint16_t h; std::memcpy(&h, bytes.data() + 2 * k, 2); return half_to_float(h); }
      case DType::bf16: { uint16_t h; std::memcpy(&h, bytes.data() + 2 * k, 2); return bf16_to_float(h); }
    }
    return 0.0f;
  }
};

DenseLinear::DenseLinear() = default;
DenseLinear::~DenseLinear() = default;
DenseLinear::DenseLinear(DenseLinear&&) noexcept = default;
DenseLinear& DenseLinear::operator=(DenseLinear&&) noexcept = default;

DenseLinear DenseLinear::prepare(DType dtype, const void* w, int64_t n_out, int64_t n_in) {
  DenseLinear d;
  d.impl_ = std::make_unique<Impl>();
  d.impl_->dtype = dtype;
  d.impl_->n_out = n_out;
  d.impl_->n_in = n_in;
  const size_t esize = dtype == DType::f32 ? 4 : 2;
  const auto* p = static_cast<const uint8_t*>(w);
  d.impl_->bytes.assign(p, p + esize * n_out * n_in);
  return d;
}

int64_t DenseLinear::n_out() const { return impl_->n_out; }
int64_t DenseLinear::n_in() const { return impl_->n_in; }
DType DenseLinear::dtype() const { return impl_->dtype; }
std::string DenseLinear::kernel_name(int64_t) const { return "gemv_dense_ref"; }

void DenseLinear::row(int64_t r, float* out) const {
  for (int64_t i = 0; i < impl_->n_in; ++i) out[i] = impl_->at(r, i);
}

void DenseLinear::forward(const float* x, int64_t n, float* y, ThreadPool& pool) const {
  const Impl& m = *impl_;
  pool.run(m.n_out, [&](int64_t b, int64_t e) {
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t r = b; r < e; ++r) {
        float acc = 0.0f;
        for (int64_t i = 0; i < m.n_in; ++i) acc += m.at(r, i) * x[t * m.n_in + i];
        y[t * m.n_out + r] = acc;
      }
    }
  });
}

}  // namespace nvfp4

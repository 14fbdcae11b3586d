// DenseLinear: float weights kept row-major in their stored dtype; forward() runs the active
// ISA's dense kernel over a fixed partition of output rows.
#include "nvfp4/dense.h"

#include <cstring>
#include <vector>

#include "kernels/packed.h"
#include "nvfp4/codec.h"
#include "nvfp4/huge_pages.h"
#include "nvfp4/kernels.h"

namespace nvfp4 {

struct DenseLinear::Impl {
  DType dtype;
  int64_t n_out, n_in;
  HugeVector<uint8_t> bytes;
};

namespace kern {

float dense_at(DType dtype, const uint8_t* bytes, int64_t k) {
  switch (dtype) {
    case DType::f32: { float v; std::memcpy(&v, bytes + 4 * k, 4); return v; }
    case DType::f16: { uint16_t h; std::memcpy(&h, bytes + 2 * k, 2); return half_to_float(h); }
    case DType::bf16: { uint16_t h; std::memcpy(&h, bytes + 2 * k, 2); return bf16_to_float(h); }
    case DType::e4m3: return e4m3_to_float(bytes[k]);
  }
  return 0.0f;
}

void gemv_dense_scalar(DType dtype, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                       int64_t n, int64_t rb, int64_t re, float* y) {
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = rb; r < re; ++r) {
      float acc = 0.0f;
      for (int64_t i = 0; i < n_in; ++i) acc += dense_at(dtype, w, r * n_in + i) * x[t * n_in + i];
      y[t * n_out + r] = acc;
    }
  }
}

}  // namespace kern

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
  const size_t esize = dtype == DType::f32 ? 4 : dtype == DType::e4m3 ? 1 : 2;
  const auto* p = static_cast<const uint8_t*>(w);
  d.impl_->bytes.assign(p, p + esize * n_out * n_in);
  return d;
}

int64_t DenseLinear::n_out() const { return impl_->n_out; }
int64_t DenseLinear::n_in() const { return impl_->n_in; }
DType DenseLinear::dtype() const { return impl_ ? impl_->dtype : DType::f32; }
std::string DenseLinear::kernel_name(int64_t) const {
  return kern::table(active_isa()).dense_name;
}

void DenseLinear::row(int64_t r, float* out) const {
  for (int64_t i = 0; i < impl_->n_in; ++i) out[i] = kern::dense_at(impl_->dtype, impl_->bytes.data(), r * impl_->n_in + i);
}

void DenseLinear::forward(const float* x, int64_t n, float* y, ThreadPool& pool) const {
  const Impl& m = *impl_;
  const kern::DenseFn fn = kern::table(active_isa()).dense;
  pool.run(m.n_out, [&](int64_t b, int64_t e) { fn(m.dtype, m.bytes.data(), m.n_out, m.n_in, x, n, b, e, y); }, 4);
}

}  // namespace nvfp4

// DenseLinear: float weights kept row-major in their stored dtype; forward() runs the active
// ISA's dense kernel over a fixed partition of output rows.
#include "nvfp4/dense.h"

#include <cstring>
#include <vector>

#include "kernels/packed.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
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
    case DType::mxfp8:
    case DType::fp8_b128: break;  // scaled: fp8s_at (the scale depends on the row and column)
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

int64_t scale_bytes(DType d, int64_t n_out, int64_t n_in) {
  if (d == DType::mxfp8) return n_out * (n_in / kMxBlock);
  if (d == DType::fp8_b128) return 4 * ((n_out + kFp8Block - 1) / kFp8Block) * ((n_in + kFp8Block - 1) / kFp8Block);
  return 0;
}

DenseLinear DenseLinear::prepare_scaled(DType dtype, const uint8_t* codes, const void* scales, int64_t n_out, int64_t n_in) {
  if (!dtype_scaled(dtype) || (dtype == DType::mxfp8 && n_in % kMxBlock != 0))
    throw Error("", "DenseLinear::prepare_scaled", "a scaled FP8 layer", "mxfp8 (n_in % 32 == 0) or fp8_b128",
                "dtype " + std::to_string(static_cast<int>(dtype)) + ", n_in " + std::to_string(n_in));
  DenseLinear d;
  d.impl_ = std::make_unique<Impl>();
  d.impl_->dtype = dtype;
  d.impl_->n_out = n_out;
  d.impl_->n_in = n_in;
  const size_t nc = static_cast<size_t>(n_out * n_in), ns = static_cast<size_t>(scale_bytes(dtype, n_out, n_in));
  d.impl_->bytes.resize(nc + ns);
  std::memcpy(d.impl_->bytes.data(), codes, nc);
  std::memcpy(d.impl_->bytes.data() + nc, scales, ns);
  return d;
}

DenseLinear DenseLinear::prepare(DType dtype, const void* w, int64_t n_out, int64_t n_in) {
  if (dtype_scaled(dtype))
    throw Error("", "DenseLinear::prepare", "a float layer's dtype", "F32, F16, BF16 or E4M3", "a scaled FP8 form (prepare_scaled)");
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
  const kern::KernelTable& t = kern::table(active_isa());
  return impl_ && dtype_scaled(impl_->dtype) ? t.fp8s_name : t.dense_name;
}

void DenseLinear::row(int64_t r, float* out) const {
  if (dtype_scaled(impl_->dtype)) {
    for (int64_t i = 0; i < impl_->n_in; ++i) out[i] = kern::fp8s_at(impl_->dtype, impl_->bytes.data(), impl_->n_out, impl_->n_in, r, i);
    return;
  }
  for (int64_t i = 0; i < impl_->n_in; ++i) out[i] = kern::dense_at(impl_->dtype, impl_->bytes.data(), r * impl_->n_in + i);
}

void DenseLinear::forward(const float* x, int64_t n, float* y, ThreadPool& pool) const {
  const Impl& m = *impl_;
  const kern::KernelTable& t = kern::table(active_isa());
  const kern::DenseFn fn = dtype_scaled(m.dtype) ? t.fp8s : t.dense;
  pool.run(m.n_out, [&](int64_t b, int64_t e) { fn(m.dtype, m.bytes.data(), m.n_out, m.n_in, x, n, b, e, y); }, 4);
}

}  // namespace nvfp4

// Fp8Linear: the row-interleaved E4M3 bytes (kernels/fp8_q8.h) and forward(): the window's
// activations quantized once (ActQ8, as Linear's a16q8), then the active ISA's fp8_q8 kernel over
// groups of 16 rows split across the pool.
#include "nvfp4/fp8_linear.h"

#include <string>
#include <utility>

#include "kernels/fp8_q8.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"

namespace nvfp4 {

struct Fp8Linear::Impl {
  kern::Fp8Q8 w;
};

Fp8Linear::Fp8Linear() = default;
Fp8Linear::~Fp8Linear() = default;
Fp8Linear::Fp8Linear(Fp8Linear&&) noexcept = default;
Fp8Linear& Fp8Linear::operator=(Fp8Linear&&) noexcept = default;

Fp8Linear::Fp8Linear(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {
// The layer's shape as the form needs it (n_in a positive multiple of `multiple`), else refused.
void check_shape(const char* fn, const char* what, int64_t multiple, int64_t n_out, int64_t n_in) {
  if (n_in <= 0 || n_in % multiple != 0 || n_out <= 0)
    throw Error("", fn, std::string("an ") + what + " layer's shape",
                "n_out > 0 and n_in a positive multiple of " + std::to_string(multiple),
                std::to_string(n_out) + " x " + std::to_string(n_in));
}
}  // namespace

Fp8Linear Fp8Linear::prepare(const uint8_t* codes, int64_t n_out, int64_t n_in) {
  check_shape("Fp8Linear::prepare", "FP8", 16, n_out, n_in);
  return Fp8Linear(std::make_unique<Impl>(Impl{kern::Fp8Q8::prepare(codes, n_out, n_in)}));
}

Fp8Linear Fp8Linear::prepare_mx(const uint8_t* codes, const uint8_t* scales, int64_t n_out, int64_t n_in) {
  check_shape("Fp8Linear::prepare_mx", "MXFP8", 32, n_out, n_in);
  return Fp8Linear(std::make_unique<Impl>(Impl{kern::Fp8Q8::prepare_mx(codes, scales, n_out, n_in)}));
}

Fp8Linear Fp8Linear::prepare_b128(const uint8_t* codes, const float* scales, int64_t n_out, int64_t n_in) {
  check_shape("Fp8Linear::prepare_b128", "FP8 128 x 128 block", 32, n_out, n_in);
  return Fp8Linear(std::make_unique<Impl>(Impl{kern::Fp8Q8::prepare_b128(codes, scales, n_out, n_in)}));
}

int64_t Fp8Linear::n_out() const { return impl_->w.n_out; }
int64_t Fp8Linear::n_in() const { return impl_->w.n_in; }
size_t Fp8Linear::bytes() const { return impl_ ? impl_->w.bytes() : 0; }
const char* Fp8Linear::form() const { return !impl_->w.mx.empty() ? "mxfp8" : !impl_->w.bs.empty() ? "b128" : "e4m3"; }
std::string Fp8Linear::kernel_name() const { return kern::table(active_isa()).fp8_q8_name; }

void Fp8Linear::forward(const float* x, int64_t n, float* y, ThreadPool& pool) const {
  const kern::Fp8Q8& w = impl_->w;
  const kern::KernelTable& k = kern::table(active_isa());
  kern::ActQ8 a;
  a.shape(n, w.n_in);
  if (n < 16) k.prep_q8(x, 0, n, a);
  else pool.run(n, [&](int64_t b, int64_t e) { k.prep_q8(x, b, e, a); });
  // One stretch of rows per thread for decode-sized windows (thread_pool.h).
  pool.run(w.n_out, [&](int64_t b, int64_t e) { k.fp8_q8(w, a, b, e, y); }, kern::kFp8RowPad,
           ThreadPool::per_thread_for(n));
}

}  // namespace nvfp4

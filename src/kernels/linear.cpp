// Linear: the prepared layer. This first version stores the row layout and runs the reference
// dot products, split over the pool's threads by output rows; ISA variants replace the inner calls.
#include "nvfp4/linear.h"

#include <vector>

#include "nvfp4/error.h"

namespace nvfp4 {

struct Linear::Impl {
  RowMatrix w;
  float input_scale = 0.0f;
  std::string name;
};

Linear::Linear() = default;
Linear::~Linear() = default;
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;

Linear Linear::prepare(const RowView& w, float input_scale, const std::string& name) {
  Linear l;
  l.impl_ = std::make_unique<Impl>();
  l.impl_->w.n_out = w.n_out;
  l.impl_->w.n_in = w.n_in;
  l.impl_->w.scale2 = w.scale2;
  l.impl_->w.codes.assign(w.codes, w.codes + w.n_out * w.code_row_bytes());
  l.impl_->w.scales.assign(w.scales, w.scales + w.n_out * w.scale_row_bytes());
  l.impl_->input_scale = input_scale;
  l.impl_->name = name;
  return l;
}

int64_t Linear::n_out() const { return impl_->w.n_out; }
int64_t Linear::n_in() const { return impl_->w.n_in; }
bool Linear::has_input_scale() const { return impl_->input_scale > 0.0f; }

std::string Linear::kernel_name(Mode mode, int64_t) const {
  return "gemv_" + std::string(mode_name(mode)) + "_ref";
}

void Linear::forward(Mode mode, const float* x, int64_t n, float* y, ThreadPool& pool) const {
  const RowView w = impl_->w.view();
  if (mode == Mode::w4a4 && !has_input_scale()) {
    throw Error("", impl_->name, "mode w4a4 needs the checkpoint's activation scale (input_scale)",
                "an input scale", "none");
  }
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * w.n_in;
    float* yt = y + t * w.n_out;
    switch (mode) {
      case Mode::a16q8: {
        Q8Activations a;
        quantize_act_q8(xt, w.n_in, a);
        pool.run(w.n_out, [&](int64_t b, int64_t e) { for (int64_t r = b; r < e; ++r) yt[r] = dot_a16q8_ref(w, r, a); });
        break;
      }
      case Mode::w4a4: {
        Fp4Activations a;
        quantize_act_fp4(xt, w.n_in, impl_->input_scale, a);
        pool.run(w.n_out, [&](int64_t b, int64_t e) { for (int64_t r = b; r < e; ++r) yt[r] = dot_w4a4_ref(w, r, a); });
        break;
      }
      case Mode::a16:
        pool.run(w.n_out, [&](int64_t b, int64_t e) { for (int64_t r = b; r < e; ++r) yt[r] = dot_a16_ref(w, r, xt); });
        break;
      case Mode::f32:
        pool.run(w.n_out, [&](int64_t b, int64_t e) { for (int64_t r = b; r < e; ++r) yt[r] = dot_f32_ref(w, r, xt); });
        break;
      case Mode::f64: {
        std::vector<double> xd(xt, xt + w.n_in);
        pool.run(w.n_out, [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) yt[r] = static_cast<float>(dot_f64_ref(w, r, xd.data()));
        });
        break;
      }
    }
  }
}

}  // namespace nvfp4

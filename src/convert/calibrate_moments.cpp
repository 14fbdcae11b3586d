// Per-input-channel second moments of every linear layer's input on calibration text, collected
// through Context::set_observer over the float model (see calibrate.h).
#include <algorithm>
#include <bit>
#include <cmath>

#include "nvfp4/calibrate.h"
#include "nvfp4/error.h"
#include "nvfp4/model.h"

namespace nvfp4 {

float round_importance(float v) {
  if (!(v > 0.0f) || !std::isfinite(v)) return v > 0.0f ? v : 0.0f;
  uint32_t b = std::bit_cast<uint32_t>(v);
  b = (b + (1u << 19)) & ~((1u << 20) - 1u);  // keep 3 of 23 mantissa bits, round half up
  return std::bit_cast<float>(b);
}

ChannelMoments calibrate_second_moments(const Checkpoint& ck, const std::vector<int32_t>& tokens, int64_t n_ctx,
                                        int threads, CalibrationModel on,
                                        const std::function<void(size_t, size_t)>& progress) {
  if (tokens.empty()) throw Error(ck.info().path, "", "calibration text gives no tokens", "at least one token", "0");
  if (n_ctx < 1) throw Error("", "--ctx", "calibration window (--ctx)", ">= 1", std::to_string(n_ctx));
  LoadOptions lo;
  lo.mode = on == CalibrationModel::float_model ? Mode::f32 : Mode::a16q8;
  lo.quantize = on == CalibrationModel::rtn_a16q8;
  lo.pinned_float = true;  // the float model's linear layers in the pinned order: the same moments on every ISA
  auto model = Model::load(ck, lo);
  ThreadPool pool(threads);
  ContextOptions co;
  co.n_ctx = n_ctx;
  co.n_batch = 64;
  Context ctx(*model, co, pool);
  struct Acc {
    std::vector<double> sum;
    int64_t count = 0;
  };
  std::map<std::string, Acc> acc;
  ctx.set_observer([&](const std::string& layer, const float* x, int64_t n, int64_t n_in) {
    Acc& a = acc[layer];
    if (a.sum.empty()) a.sum.assign(static_cast<size_t>(n_in), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < n_in; ++i) {
        const double v = x[t * n_in + i];
        a.sum[static_cast<size_t>(i)] += v * v;
      }
    }
    a.count += n;
  });
  for (size_t s = 0; s < tokens.size(); s += static_cast<size_t>(n_ctx)) {
    const size_t n = std::min(tokens.size() - s, static_cast<size_t>(n_ctx));
    ctx.reset();
    ctx.eval(tokens.data() + s, static_cast<int64_t>(n), nullptr);
    if (progress) progress(s + n, tokens.size());
  }
  ChannelMoments out;
  for (const auto& [layer, a] : acc) {
    std::vector<float>& m = out[layer];
    m.resize(a.sum.size());
    for (size_t i = 0; i < a.sum.size(); ++i) {
      m[i] = round_importance(static_cast<float>(a.sum[i] / static_cast<double>(a.count)));
    }
  }
  return out;
}

}  // namespace nvfp4

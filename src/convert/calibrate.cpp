#include "nvfp4/calibrate.h"

#include <algorithm>
#include <cmath>

#include "nvfp4/model.h"

namespace nvfp4 {

std::map<std::string, float> calibrate_input_scales(const Checkpoint& ck, const std::vector<int32_t>& tokens,
                                                    int64_t n_ctx, int threads) {
  LoadOptions lo;
  lo.mode = Mode::f32;
  lo.quantize = false;
  auto model = Model::load(ck, lo);
  ThreadPool pool(threads);
  ContextOptions co;
  co.n_ctx = n_ctx;
  co.n_batch = 64;
  Context ctx(*model, co, pool);
  std::map<std::string, float> amax;
  ctx.set_observer([&](const std::string& layer, const float* x, int64_t n, int64_t n_in) {
    float& a = amax[layer];
    for (int64_t i = 0; i < n * n_in; ++i) a = std::max(a, std::fabs(x[i]));
  });
  for (size_t s = 0; s < tokens.size(); s += static_cast<size_t>(n_ctx)) {
    const size_t n = std::min(tokens.size() - s, static_cast<size_t>(n_ctx));
    ctx.reset();
    ctx.eval(tokens.data() + s, static_cast<int64_t>(n), nullptr);
  }
  std::map<std::string, float> out;
  for (const auto& [k, a] : amax) out[k] = a > 0.0f ? a / 2688.0f : 1.0f;
  return out;
}

}  // namespace nvfp4

#include "convert/weight_quantizer.h"
#include "nvfp4/mapped_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <regex>
#include <thread>

#include "nvfp4/error.h"
#include "nvfp4/quantize.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4 {

namespace {

std::string read_file(const std::string& path) {
  return read_regular_file(path);  // a FIFO or device is refused, not waited on
}

std::string layer_of(const std::string& name) {
  const std::string suf = ".weight";
  return name.size() > suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0
             ? name.substr(0, name.size() - suf.size())
             : name;
}

}  // namespace

std::string fused_group(const std::string& name) {
  // q/k/v of a layer; gate/up of a layer, of its shared expert, and of each routed expert
  // (blk.N.ffn_{gate,up}_exps.E), as ModelOpt unifies them.
  static const std::regex re(R"(^(blk\.\d+\.)(attn_q|attn_k|attn_v|ffn_gate|ffn_up|ffn_gate_shexp|ffn_up_shexp|ffn_gate_exps|ffn_up_exps)(\.\d+)?\.weight$)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return "";
  const std::string part = m[2].str();
  const bool expert = part.find("_exps") != std::string::npos;
  if (expert != m[3].matched) return "";
  if (part.rfind("attn_", 0) == 0) return m[1].str() + "attn_qkv";
  if (part.find("_shexp") != std::string::npos) return m[1].str() + "ffn_gate_up_shexp";
  return m[1].str() + (expert ? "ffn_gate_up_exps" + m[3].str() : "ffn_gate_up");
}

WeightQuantizer::WeightQuantizer(const Checkpoint& ck, const ConvertOptions& opt, bool pre_quant_scale_ok,
                                 const std::function<bool(const std::string&)>& eligible)
    : ck_(ck), opt_(opt), threads_(opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {
  if (opt.method != "rtn" && opt.method != "search" && opt.method != "awq") {
    throw Error("", "--quantize-method", "unknown --quantize-method", "rtn, search or awq", opt.method);
  }
  if (opt.method == "awq" && opt.calibrate.empty()) {
    throw Error("", "--calibrate", "--quantize-method awq searches its scales on calibration activations", "--calibrate FILE", "none");
  }
  if (opt.scale2 != "fused" && opt.scale2 != "per-tensor") throw Error("", "--scale2", "unknown --scale2", "fused or per-tensor", opt.scale2);
  if (opt.awq_rounding != "rtn" && opt.awq_rounding != "search") {
    throw Error("", "--awq-rounding", "unknown --awq-rounding", "rtn or search", opt.awq_rounding);
  }
  if (opt.search_radius < 0 || opt.search_radius > 32) {
    throw Error("", "--search-radius", "--search-radius", "0..32", std::to_string(opt.search_radius));
  }
  if (!opt.calibrate.empty()) {
    if (opt.method == "rtn") throw Error(opt.calibrate, "", "--calibrate weights the search", "--quantize-method search or awq", opt.method);
    const Tokenizer tok = Tokenizer::from_checkpoint(ck);
    const std::vector<int32_t> toks = tok.encode(read_file(opt.calibrate), false);
    if (opt.log) opt.log("calibrate: " + std::to_string(toks.size()) + " tokens of " + opt.calibrate + ", windows of " + std::to_string(opt.calib_ctx));
    if (opt.calib_model != "float" && opt.calib_model != "rtn") {
      throw Error("", "--calibrate-model", "unknown --calibrate-model", "float or rtn", opt.calib_model);
    }
    const auto log = opt.log;
    const CalibrationModel on = opt.calib_model == "rtn" ? CalibrationModel::rtn_a16q8 : CalibrationModel::float_model;
    moments_ = calibrate_second_moments(ck, toks, opt.calib_ctx, threads_, on, [log](size_t done, size_t total) {
      if (log) log("calibrate: " + std::to_string(done) + "/" + std::to_string(total) + " tokens");
    });
  }
  if (opt.method == "awq") {
    const auto all = [](const std::string&) { return true; };
    awq_ = plan_awq(ck, moments_, pre_quant_scale_ok, opt.scale2 == "fused", threads_, eligible ? eligible : all, notes_, opt.log);
  }
}

std::vector<float> WeightQuantizer::scaled(const std::string& name, std::vector<float> w) const {
  auto it = awq_.group_of.find(name);
  if (it == awq_.group_of.end()) return w;
  const std::vector<float>& s = awq_.groups[it->second].s;
  const size_t n_in = s.size();
  for (size_t i = 0; i < w.size(); ++i) w[i] = w[i] * s[i % n_in];
  return w;
}

std::vector<float> WeightQuantizer::pre_quant_scale(const std::string& name) const {
  auto it = awq_.group_of.find(name);
  if (it == awq_.group_of.end() || !awq_.groups[it->second].norm.empty()) return {};
  std::vector<float> p = awq_.groups[it->second].s;
  for (float& v : p) v = 1.0f / v;
  return p;
}

std::vector<float> WeightQuantizer::fold_norm(const std::string& name, std::vector<float> v) const {
  auto it = awq_.norm_of.find(name);
  if (it == awq_.norm_of.end()) return v;
  const std::vector<float>& s = awq_.groups[it->second].s;
  if (s.size() != v.size()) throw Error(ck_.info().path, name, "awq scale does not fit the norm", std::to_string(s.size()), std::to_string(v.size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = v[i] * (1.0f / s[i]);
  return v;
}

float WeightQuantizer::scale2(const std::string& name, const std::vector<float>& w) const {
  const auto amax = [](const std::vector<float>& v) {
    float a = 0.0f;
    for (float x : v) a = std::max(a, std::fabs(x));
    return a;
  };
  // w: the weight as quantized (awq: already scaled); the other members are scaled here alike.
  const std::string g = opt_.scale2 == "fused" ? fused_group(name) : "";
  if (g.empty()) return tensor_scale2(w.data(), static_cast<int64_t>(w.size()));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = group_scale2_.find(g);
  if (it != group_scale2_.end()) return it->second;
  // The largest amax of the group's float-stored members, / 2688 (ModelOpt takes the largest
  // weight_scale_2, which is the same number: the division by 2688 is monotone).
  float a = 0.0f;
  for (const TensorEntry& e : ck_.tensors()) {
    if (e.storage == Storage::nvfp4 || fused_group(e.name) != g) continue;
    a = std::max(a, e.name == name ? amax(w) : amax(scaled(e.name, ck_.to_f32(e.name))));
  }
  const float s2 = a == 0.0f ? 1.0f : a / 2688.0f;
  group_scale2_[g] = s2;
  return s2;
}

RowMatrix WeightQuantizer::quantize(const std::string& name, const std::vector<float>& w_in, int64_t n_out, int64_t n_in) const {
  const std::vector<float> w_scaled = awq() ? scaled(name, w_in) : std::vector<float>{};
  const std::vector<float>& w = awq() ? w_scaled : w_in;
  const float s2 = scale2(name, w);
  if (!(s2 > 0.0f)) {
    // amax > 0 yet amax / 2688 underflows: quantize() names the rule.
    return nvfp4::quantize(w.data(), n_out, n_in, name);
  }
  const float* imp = nullptr;
  const bool search = opt_.method == "search" || (awq() && opt_.awq_rounding == "search");
  std::vector<float> awq_imp;
  if (search && !moments_.empty()) {
    auto it = moments_.find(layer_of(name));
    if (it == moments_.end()) {
      throw Error(opt_.calibrate, name, "no calibration statistics for this layer", "the float model runs it", "never observed");
    }
    if (static_cast<int64_t>(it->second.size()) != n_in) {
      throw Error(opt_.calibrate, name, "calibration statistics do not fit", std::to_string(n_in) + " channels", std::to_string(it->second.size()));
    }
    imp = it->second.data();
    auto g = awq_.group_of.find(name);
    if (g != awq_.group_of.end()) {  // the quantized layer's input is x * (1 / s): mean x_i^2 / s_i^2
      const std::vector<float>& sc = awq_.groups[g->second].s;
      awq_imp.resize(sc.size());
      for (size_t i = 0; i < sc.size(); ++i) {
        const float p = 1.0f / sc[i];
        awq_imp[i] = it->second[i] * (p * p);
      }
      imp = awq_imp.data();
    }
  }
  RowMatrix m;
  m.n_out = n_out;
  m.n_in = n_in;
  m.scale2 = s2;
  m.codes.resize(static_cast<size_t>(n_out * n_in / 2));
  m.scales.resize(static_cast<size_t>(n_out * n_in / 16));
  const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads_, n_out)));
  std::vector<std::thread> pool;
  std::exception_ptr failure;
  std::mutex fmu;
  for (int t = 0; t < nt; ++t) {
    pool.emplace_back([&, t] {
      try {
        const int64_t r0 = n_out * t / nt, r1 = n_out * (t + 1) / nt;
        if (r1 <= r0) return;
        const RowMatrix part = search
                                   ? quantize_search(w.data() + r0 * n_in, r1 - r0, n_in, s2, imp, opt_.search_radius, name)
                                   : quantize_with_scale2(w.data() + r0 * n_in, r1 - r0, n_in, s2, name);
        std::copy(part.codes.begin(), part.codes.end(), m.codes.begin() + r0 * (n_in / 2));
        std::copy(part.scales.begin(), part.scales.end(), m.scales.begin() + r0 * (n_in / 16));
      } catch (...) {
        std::lock_guard<std::mutex> lock(fmu);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
  return m;
}

}  // namespace nvfp4

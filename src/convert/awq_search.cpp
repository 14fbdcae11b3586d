#include "convert/awq_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <regex>
#include <thread>

#include "nvfp4/error.h"
#include "nvfp4/quantize.h"

namespace nvfp4 {

namespace {

constexpr int kAlphas = 11;  // 0, 0.1, .., 1

std::string layer_of(const std::string& weight) { return weight.substr(0, weight.size() - 7); }

std::vector<float> scales_for(const std::vector<float>& m2, int k) {
  const double alpha = k / 10.0;
  std::vector<double> t(m2.size());
  double lo = 0, hi = 0;
  for (size_t i = 0; i < m2.size(); ++i) {
    t[i] = k == 0 ? 1.0 : std::pow(std::max(std::sqrt(static_cast<double>(m2[i])), 1e-4), alpha);
    lo = i ? std::min(lo, t[i]) : t[i];
    hi = i ? std::max(hi, t[i]) : t[i];
  }
  const double norm = std::sqrt(hi * lo);
  std::vector<float> s(m2.size());
  for (size_t i = 0; i < m2.size(); ++i) s[i] = static_cast<float>(t[i] / norm);
  return s;
}

struct Member {
  std::string name;
  std::vector<float> w;
  int64_t n_out = 0;
};

// sum_j sum_i m_i (W_ji - Q(W s)_ji * (1 / s_i))^2 over the members, float64, in order.
double score(const std::vector<Member>& ms, int64_t n_in, const std::vector<float>& m2, const std::vector<float>& s, bool fused) {
  std::vector<std::vector<float>> sc(ms.size());
  float all = 0.0f;
  std::vector<float> amax(ms.size(), 0.0f);
  for (size_t k = 0; k < ms.size(); ++k) {
    sc[k].resize(ms[k].w.size());
    for (int64_t r = 0; r < ms[k].n_out; ++r)
      for (int64_t i = 0; i < n_in; ++i) {
        const float v = ms[k].w[static_cast<size_t>(r * n_in + i)] * s[static_cast<size_t>(i)];
        sc[k][static_cast<size_t>(r * n_in + i)] = v;
        amax[k] = std::max(amax[k], std::fabs(v));
      }
    all = std::max(all, amax[k]);
  }
  std::vector<float> p(s.size());
  for (size_t i = 0; i < s.size(); ++i) p[i] = 1.0f / s[i];
  double err = 0.0;
  std::vector<float> d;
  for (size_t k = 0; k < ms.size(); ++k) {
    const float s2 = fused ? (all == 0.0f ? 1.0f : all / 2688.0f) : tensor_scale2(sc[k].data(), static_cast<int64_t>(sc[k].size()));
    const RowMatrix q = quantize_with_scale2(sc[k].data(), ms[k].n_out, n_in, s2, ms[k].name);
    d.resize(sc[k].size());
    dequantize(q.view(), d.data());
    for (int64_t r = 0; r < ms[k].n_out; ++r)
      for (int64_t i = 0; i < n_in; ++i) {
        const size_t at = static_cast<size_t>(r * n_in + i);
        const double e = static_cast<double>(ms[k].w[at]) - static_cast<double>(d[at] * p[static_cast<size_t>(i)]);
        err += static_cast<double>(m2[static_cast<size_t>(i)]) * (e * e);
      }
  }
  return err;
}

void search_group(const Checkpoint& ck, AwqGroup& g, const std::vector<float>& m2, bool fused, int threads) {
  std::vector<Member> ms;
  int64_t n_in = 0;
  for (const std::string& n : g.members) {
    const TensorEntry& e = ck.tensor(n);
    n_in = e.shape.back();
    ms.push_back({n, ck.to_f32(n), e.shape.front()});
  }
  double errs[kAlphas];
  std::exception_ptr failure;
  std::mutex mu;
  const int nt = std::max(1, std::min(threads, kAlphas));
  std::vector<std::thread> pool;
  for (int t = 0; t < nt; ++t) {
    pool.emplace_back([&, t] {
      try {
        for (int k = t; k < kAlphas; k += nt) errs[k] = score(ms, n_in, m2, scales_for(m2, k), fused);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
  int best = 0;
  for (int k = 1; k < kAlphas; ++k) if (errs[k] < errs[best]) best = k;
  g.s = scales_for(m2, best);
  g.alpha = best / 10.0;
  g.err = errs[best];
  g.err_rtn = errs[0];
}

}  // namespace

AwqPlan plan_awq(const Checkpoint& ck, const ChannelMoments& m2, bool pre_quant_scale_ok, bool fused, int threads,
                 const std::function<bool(const std::string&)>& eligible, std::vector<std::string>& notes,
                 const std::function<void(const std::string&)>& log) {
  const gguf::Value* a = ck.meta("general.architecture");
  const std::string arch = a && a->type == gguf::ValueType::string ? a->s : "";
  // Architectures whose blocks are x + attn(attn_norm(x)), then x + ffn(ffn_norm(x)) with a plain
  // RMSNorm weight (no +1 offset): the fold into the norm is exact there.
  if (arch != "llama" && arch != "mistral" && arch != "qwen2" && arch != "qwen3") {
    throw Error(ck.info().path, "general.architecture", "--quantize-method awq folds scales into the norms of known block layouts",
                "llama, mistral, qwen2 or qwen3", arch.empty() ? "none" : arch);
  }
  AwqPlan plan;
  static const std::regex re(R"(^blk\.(\d+)\.attn_norm\.weight$)");
  std::vector<int> blocks;
  for (const TensorEntry& e : ck.tensors()) {
    std::smatch mt;
    if (std::regex_match(e.name, mt, re)) blocks.push_back(std::stoi(mt[1].str()));
  }
  std::sort(blocks.begin(), blocks.end());
  for (int b : blocks) {
    const std::string p = "blk." + std::to_string(b) + ".";
    const std::vector<std::pair<std::string, std::vector<std::string>>> groups = {
        {p + "attn_norm.weight", {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}},
        {"", {p + "attn_output.weight"}},
        {p + "ffn_norm.weight", {p + "ffn_gate.weight", p + "ffn_up.weight"}},
        {"", {p + "ffn_down.weight"}},
    };
    // A router reads ffn_norm's output too (MoE): the fold would change it.
    const bool router = ck.find(p + "ffn_gate_inp.weight") != nullptr;
    for (const auto& [norm, members] : groups) {
      if (norm.empty() && !pre_quant_scale_ok) continue;  // GGUF holds no pre_quant_scale: s = 1
      bool ok = !(router && norm == p + "ffn_norm.weight") && (norm.empty() || ck.find(norm));
      for (const std::string& n : members) ok = ok && ck.find(n) && eligible(n) && m2.count(layer_of(n));
      if (!ok) {
        notes.push_back(members.front() + (members.size() > 1 ? " and its group" : "") +
                        ": awq left out (a member is missing, kept, already quantized or not calibrated, or another layer reads the norm); rtn");
        continue;
      }
      AwqGroup g;
      g.norm = norm;
      g.members = members;
      search_group(ck, g, m2.at(layer_of(members.front())), fused, threads);
      if (log) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "awq: %s alpha %.1f, weighted error %.4g (rtn %.4g)", layer_of(members.front()).c_str(), g.alpha,
                      g.err, g.err_rtn);
        log(buf);
      }
      const size_t at = plan.groups.size();
      for (const std::string& n : members) plan.group_of[n] = at;
      if (!norm.empty()) plan.norm_of[norm] = at;
      plan.groups.push_back(std::move(g));
    }
  }
  return plan;
}

}  // namespace nvfp4

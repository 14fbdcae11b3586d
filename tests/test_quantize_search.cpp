// convert --quantize-method search (quantize_search.cpp, weight_quantizer.cpp, calibrate_moments.cpp)
// and the fused tensor scales of the default rtn: the search never raises a block's weighted
// error above rtn's, radius 0 is rtn, and the bytes are the same for any thread count and ISA.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "convert/weight_quantizer.h"
#include "io_test_util.h"
#include "model_path.h"
#include "nvfp4/calibrate.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/codec.h"
#include "nvfp4/convert.h"
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/kernels.h"
#include "nvfp4/quantize.h"
#include "nvfp4/tokenizer.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

// Blocks of several shapes: gaussian, one outlier, heavy-tailed, nearly constant, with zeros.
std::vector<float> test_weights(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 0.02f);
  std::student_t_distribution<float> t(2.0f);
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t b = 0; b < n / 16; ++b) {
    const int kind = static_cast<int>(b % 5);
    for (int j = 0; j < 16; ++j) {
      float v = g(rng);
      if (kind == 1 && j == 3) v *= 20.0f;
      if (kind == 2) v = 0.01f * t(rng);
      if (kind == 3) v = 0.5f + 0.001f * g(rng);
      if (kind == 4 && j % 3 == 0) v = 0.0f;
      w[static_cast<size_t>(b * 16 + j)] = v;
    }
  }
  return w;
}

std::vector<float> test_importance(int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::lognormal_distribution<float> l(0.0f, 1.5f);
  std::vector<float> h(static_cast<size_t>(n_in));
  for (int64_t i = 0; i < n_in; ++i) h[static_cast<size_t>(i)] = i % 17 == 0 ? 0.0f : round_importance(l(rng));
  return h;
}

// Per block: weighted error of `a` <= that of `b` (same weights). Returns how many are strictly lower.
int64_t check_not_worse(const std::vector<float>& w, const float* h, const RowMatrix& a, const RowMatrix& b) {
  int64_t lower = 0;
  const int64_t per_row = a.n_in / 16;
  for (int64_t k = 0; k < a.n_out * per_row; ++k) {
    const float* hk = h ? h + (k % per_row) * 16 : nullptr;
    const double ea = group_error(w.data() + k * 16, hk, a.scale2, a.scales[k], a.codes.data() + k * 8);
    const double eb = group_error(w.data() + k * 16, hk, b.scale2, b.scales[k], b.codes.data() + k * 8);
    EXPECT_LE(ea, eb) << "block " << k;
    if (ea > eb) return -1;
    lower += ea < eb;
  }
  return lower;
}

}  // namespace

TEST(QuantizeSearch, NeverRaisesAnyBlocksWeightedErrorAboveRtn) {
  const int64_t n_out = 96, n_in = 256;
  const std::vector<float> w = test_weights(n_out * n_in, 7);
  const std::vector<float> h = test_importance(n_in, 11);
  const float s2 = tensor_scale2(w.data(), n_out * n_in);
  const RowMatrix rtn = quantize_with_scale2(w.data(), n_out, n_in, s2);
  for (int radius : {1, 4, 8}) {
    const RowMatrix sw = quantize_search(w.data(), n_out, n_in, s2, h.data(), radius);
    const RowMatrix su = quantize_search(w.data(), n_out, n_in, s2, nullptr, radius);
    const int64_t lw = check_not_worse(w, h.data(), sw, rtn);
    const int64_t lu = check_not_worse(w, nullptr, su, rtn);
    // The search finds something: a good share of the blocks improve.
    EXPECT_GT(lw, n_out * n_in / 16 / 10) << radius;
    EXPECT_GT(lu, n_out * n_in / 16 / 10) << radius;
    for (uint8_t s : sw.scales) EXPECT_TRUE(s >= 1 && s <= 0x7E);
  }
  // A wider neighbourhood is never worse in total.
  double e4 = 0, e8 = 0;
  const RowMatrix s4 = quantize_search(w.data(), n_out, n_in, s2, h.data(), 4);
  const RowMatrix s8 = quantize_search(w.data(), n_out, n_in, s2, h.data(), 8);
  for (int64_t k = 0; k < n_out * n_in / 16; ++k) {
    const float* hk = h.data() + (k % (n_in / 16)) * 16;
    e4 += group_error(w.data() + k * 16, hk, s2, s4.scales[k], s4.codes.data() + k * 8);
    e8 += group_error(w.data() + k * 16, hk, s2, s8.scales[k], s8.codes.data() + k * 8);
  }
  EXPECT_LE(e8, e4);
}

TEST(QuantizeSearch, RadiusZeroAndZeroImportanceAreRtn) {
  const int64_t n_out = 32, n_in = 128;
  const std::vector<float> w = test_weights(n_out * n_in, 3);
  const float s2 = tensor_scale2(w.data(), n_out * n_in);
  const RowMatrix rtn = quantize_with_scale2(w.data(), n_out, n_in, s2);
  const RowMatrix r0 = quantize_search(w.data(), n_out, n_in, s2, nullptr, 0);
  EXPECT_EQ(r0.codes, rtn.codes);
  EXPECT_EQ(r0.scales, rtn.scales);
  const std::vector<float> zero(static_cast<size_t>(n_in), 0.0f);  // every error 0: ties keep rtn
  const RowMatrix z = quantize_search(w.data(), n_out, n_in, s2, zero.data(), 8);
  EXPECT_EQ(z.codes, rtn.codes);
  EXPECT_EQ(z.scales, rtn.scales);
}

TEST(QuantizeSearch, RowsAreIndependentAndRefusalsNameTheTensor) {
  const int64_t n_out = 40, n_in = 64;
  const std::vector<float> w = test_weights(n_out * n_in, 5);
  const std::vector<float> h = test_importance(n_in, 9);
  const float s2 = tensor_scale2(w.data(), n_out * n_in);
  const RowMatrix all = quantize_search(w.data(), n_out, n_in, s2, h.data(), 4);
  const RowMatrix top = quantize_search(w.data(), 13, n_in, s2, h.data(), 4);
  const RowMatrix rest = quantize_search(w.data() + 13 * n_in, n_out - 13, n_in, s2, h.data(), 4);
  std::vector<uint8_t> codes = top.codes, scales = top.scales;
  codes.insert(codes.end(), rest.codes.begin(), rest.codes.end());
  scales.insert(scales.end(), rest.scales.begin(), rest.scales.end());
  EXPECT_EQ(codes, all.codes);
  EXPECT_EQ(scales, all.scales);
  std::vector<float> bad = w;
  bad[77] = NAN;
  try {
    quantize_search(bad.data(), n_out, n_in, s2, h.data(), 4, "blk.0.attn_q.weight");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.tensor(), "blk.0.attn_q.weight");
    EXPECT_NE(std::string(e.what()).find("flat index 77"), std::string::npos) << e.what();
  }
  std::vector<float> hb = h;
  hb[5] = -1.0f;
  EXPECT_THROW(quantize_search(w.data(), n_out, n_in, s2, hb.data(), 4), Error);
  EXPECT_THROW(quantize_search(w.data(), n_out, 24, s2, nullptr, 4), Error);
}

TEST(QuantizeSearch, RoundImportanceKeepsFourSignificantBits) {
  EXPECT_EQ(round_importance(1.0f), 1.0f);
  EXPECT_EQ(round_importance(1.0625f), 1.125f);   // half way: up
  EXPECT_EQ(round_importance(1.06f), 1.0f);
  EXPECT_EQ(round_importance(3.3f), 3.25f);
  EXPECT_EQ(round_importance(0.0f), 0.0f);
  EXPECT_EQ(round_importance(-2.0f), 0.0f);
}

TEST(FusedScale, GroupNames) {
  EXPECT_EQ(fused_group("blk.3.attn_q.weight"), "blk.3.attn_qkv");
  EXPECT_EQ(fused_group("blk.3.attn_v.weight"), "blk.3.attn_qkv");
  EXPECT_EQ(fused_group("blk.12.ffn_gate.weight"), "blk.12.ffn_gate_up");
  EXPECT_EQ(fused_group("blk.12.ffn_up.weight"), "blk.12.ffn_gate_up");
  // Per expert (the checkpoint's per-expert entries) and the shared expert, as ModelOpt unifies them.
  EXPECT_EQ(fused_group("blk.1.ffn_up_exps.7.weight"), "blk.1.ffn_gate_up_exps.7");
  EXPECT_EQ(fused_group("blk.1.ffn_gate_exps.7.weight"), "blk.1.ffn_gate_up_exps.7");
  EXPECT_EQ(fused_group("blk.1.ffn_gate_exps.6.weight"), "blk.1.ffn_gate_up_exps.6");
  EXPECT_EQ(fused_group("blk.1.ffn_up_exps.weight"), "");  // a stack is split per expert first
  EXPECT_EQ(fused_group("blk.1.ffn_down_exps.7.weight"), "");
  EXPECT_EQ(fused_group("blk.2.ffn_gate_shexp.weight"), "blk.2.ffn_gate_up_shexp");
  EXPECT_EQ(fused_group("blk.2.ffn_up_shexp.weight"), "blk.2.ffn_gate_up_shexp");
  EXPECT_EQ(fused_group("blk.3.attn_output.weight"), "");
  EXPECT_EQ(fused_group("blk.3.ffn_down.weight"), "");
  EXPECT_EQ(fused_group("blk.3.attn_q.bias"), "");
  EXPECT_EQ(fused_group("token_embd.weight"), "");
}

TEST(FusedScale, QkvAndGateUpShareTheLargestTensorScaleAsModelOptExports) {
  test::ScratchDir tmp;
  const std::string fused = tmp / "fused", own = tmp / "own";
  ConvertOptions opt;
  convert(test::fixture_path("hf/float"), fused, opt);
  opt.scale2 = "per-tensor";
  convert(test::fixture_path("hf/float"), own, opt);
  const auto src = Checkpoint::open(test::fixture_path("hf/float"));
  const auto a = Checkpoint::open(fused), b = Checkpoint::open(own);
  int checked = 0;
  for (const auto& group : {std::vector<std::string>{"attn_q", "attn_k", "attn_v"}, {"ffn_gate", "ffn_up"}, {"attn_output"}, {"ffn_down"}}) {
    float want = 0.0f;
    for (const auto& m : group) want = std::max(want, b->tensor("blk.0." + m + ".weight").scale2);
    for (const auto& m : group) {
      const std::string n = "blk.0." + m + ".weight";
      EXPECT_EQ(a->tensor(n).scale2, want) << n;
      // The bytes are rtn with that scale.
      const std::vector<float> w = src->to_f32(n);
      const auto& e = src->tensor(n);
      const RowMatrix q = quantize_with_scale2(w.data(), e.shape[0], e.shape[1], want, n);
      const RowMatrix got = a->nvfp4(n);
      EXPECT_EQ(got.codes, q.codes) << n;
      EXPECT_EQ(got.scales, q.scales) << n;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 7);
  // The group scale differs from a member's own somewhere (the fixture's q/k/v amaxes differ).
  EXPECT_NE(a->tensor("blk.0.attn_k.weight").scale2 == b->tensor("blk.0.attn_k.weight").scale2 &&
                a->tensor("blk.0.attn_q.weight").scale2 == b->tensor("blk.0.attn_q.weight").scale2 &&
                a->tensor("blk.0.attn_v.weight").scale2 == b->tensor("blk.0.attn_v.weight").scale2,
            true);
  std::filesystem::remove_all(fused);
  std::filesystem::remove_all(own);
}

TEST(FusedScale, OptionsAreChecked) {
  test::ScratchDir tmp;
  ConvertOptions opt;
  opt.method = "gptq";
  EXPECT_THROW(convert(test::fixture_path("hf/float"), tmp / "x", opt), Error);
  opt = ConvertOptions{};
  opt.scale2 = "per-row";
  EXPECT_THROW(convert(test::fixture_path("hf/float"), tmp / "x", opt), Error);
  opt = ConvertOptions{};
  opt.calibrate = test::fixture_path("hf/float/config.json");  // rtn takes no calibration
  EXPECT_THROW(convert(test::fixture_path("hf/float"), tmp / "x", opt), Error);
  EXPECT_TRUE(tmp.entries().empty());
}

namespace {
// Channels whose rounded second moment differs between two calibrations (layers must match).
int64_t moments_differ(const ChannelMoments& a, const ChannelMoments& b) {
  EXPECT_EQ(a.size(), b.size());
  int64_t d = 0;
  for (const auto& [k, v] : a) {
    const auto it = b.find(k);
    if (it == b.end() || it->second.size() != v.size()) return -1;
    for (size_t i = 0; i < v.size(); ++i) d += v[i] != it->second[i];
  }
  return d;
}
struct IsaScope {
  explicit IsaScope(Isa i) { force_isa(i); }
  ~IsaScope() { clear_forced_isa(); }
};
const char* kCalibText =
    "The NVFP4 format stores each weight in four bits with a shared eight-bit scale per sixteen values. "
    "def f(x):\n    return [v * 2 for v in x if v > 0]\nLes modèles de langue prédisent le prochain mot. "
    "Der schnelle braune Fuchs springt über den faulen Hund. 你好，世界！ The river rose slowly through the night.";
}  // namespace

TEST(QuantizeSearchModel, CalibrationIsTheSameForThreadsAndPinnedAcrossIsasAndSearchNeverWorseThanRtn) {
  NVFP4_REQUIRE_SMOLLM2(path);
  auto ck = Checkpoint::open(path);
  const Tokenizer tok = Tokenizer::from_checkpoint(*ck);
  std::vector<int32_t> ids = tok.encode(kCalibText, false);
  const int64_t n_tok = kUnderSanitizer ? 16 : 64;
  ASSERT_GE(ids.size(), static_cast<size_t>(n_tok));
  ids.resize(static_cast<size_t>(n_tok));
  const ChannelMoments ref = calibrate_second_moments(*ck, ids, 32, 2);
  for (int b = 0; b < 30; ++b) {
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
      EXPECT_EQ(ref.count("blk." + std::to_string(b) + "." + m), 1u) << b << " " << m;
    }
  }
  // The float model (pinned float layers): the same for 1 and 2 threads, and every ISA below.
  EXPECT_EQ(moments_differ(calibrate_second_moments(*ck, ids, 32, 1), ref), 0) << "1 thread";
  // The rtn model in a16q8: the same for threads and every ISA this CPU has.
  const ChannelMoments pinned = calibrate_second_moments(*ck, ids, 32, 2, CalibrationModel::rtn_a16q8);
  EXPECT_GT(moments_differ(pinned, ref), 0);  // another model: other statistics
  EXPECT_EQ(moments_differ(calibrate_second_moments(*ck, ids, 32, 1, CalibrationModel::rtn_a16q8), pinned), 0);
  // Every ISA in the Release tree; under the sanitizers (where the scalar ISA's calibrations took
  // most of this test's 107 s) the best one only: the kernel tests take every ISA there.
  int isas = 0;
  for (Isa i : compiled_isas()) {
    if (!isa_supported(i) || (kUnderSanitizer && i != detect_isa())) continue;
    IsaScope s(i);
    EXPECT_EQ(moments_differ(calibrate_second_moments(*ck, ids, 32, 2, CalibrationModel::rtn_a16q8), pinned), 0)
        << "ISA " << static_cast<int>(i);
    EXPECT_EQ(moments_differ(calibrate_second_moments(*ck, ids, 32, 2), ref), 0) << "float model, ISA " << static_cast<int>(i);
    ++isas;
  }
  EXPECT_GE(isas, kUnderSanitizer ? 1 : 2);
  // The weighted search on real tensors: no block worse than rtn, many better.
  for (const std::string layer : {"blk.0.ffn_down", "blk.5.attn_q"}) {
    const std::vector<float> w = ck->to_f32(layer + ".weight");
    const auto& e = ck->tensor(layer + ".weight");
    const std::vector<float>& h = ref.at(layer);
    ASSERT_EQ(static_cast<int64_t>(h.size()), e.shape[1]);
    const float s2 = tensor_scale2(w.data(), static_cast<int64_t>(w.size()));
    const RowMatrix rtn = quantize_with_scale2(w.data(), e.shape[0], e.shape[1], s2);
    const RowMatrix srch = quantize_search(w.data(), e.shape[0], e.shape[1], s2, h.data(), 4);
    EXPECT_GT(check_not_worse(w, h.data(), srch, rtn), static_cast<int64_t>(w.size()) / 16 / 10) << layer;
  }
}

#if !defined(NVFP4_SANITIZED)
TEST(QuantizeSearchModel, ConvertSearchBytesAreTheSameForOneAndTwoThreads) {
  NVFP4_REQUIRE_SMOLLM2(path);
  test::ScratchDir tmp;
  {
    std::ofstream f(tmp / "calib.txt");
    f << kCalibText;
  }
  ConvertOptions opt;
  opt.method = "search";
  opt.calibrate = tmp / "calib.txt";
  opt.calib_ctx = 32;
  opt.keep = {"blk.[1-9]*", "blk.[1-9][0-9]*"};  // only block 0 quantized (time)
  opt.threads = 2;
  convert(path, tmp / "t2.gguf", opt);
  opt.threads = 1;
  convert(path, tmp / "t1.gguf", opt);
  ConvertOptions r;
  r.keep = opt.keep;
  convert(path, tmp / "rtn.gguf", r);
  const auto a = gguf::File::open(tmp / "t2.gguf"), b = gguf::File::open(tmp / "t1.gguf"), c = gguf::File::open(tmp / "rtn.gguf");
  int compared = 0;
  for (const auto& t : a.tensors()) {
    if (t.name.rfind("blk.0.", 0) != 0) continue;
    const auto& u = b.tensor(t.name);
    ASSERT_EQ(t.nbytes, u.nbytes) << t.name;
    EXPECT_EQ(std::memcmp(t.data, u.data, static_cast<size_t>(t.nbytes)), 0) << t.name;
    ++compared;
  }
  EXPECT_GE(compared, 14);  // 7 weights and their scales (+ the norms)
  const auto& x = a.tensor("blk.0.ffn_down.weight");
  EXPECT_NE(std::memcmp(x.data, c.tensor("blk.0.ffn_down.weight").data, static_cast<size_t>(x.nbytes)), 0) << "search is not rtn";
}
#endif

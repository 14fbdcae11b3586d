// ModelOpt's NVFP4_AWQ form (fixtures/arch/qwen2-awq/, tools/gen_awq_fixture.py: mtq.quantize with
// NVFP4_AWQ_LITE_CFG + export_hf_checkpoint of the qwen2 fixture) run by the runtime against
// ModelOpt's own fake-quantized model.
//
// The export folds the q/k/v and gate/up scales into the norm weights and keeps pre_quant_scale
// on o_proj and down_proj, whose weights are quantized from W * s: without x * s applied before
// those layers the logits are off by the whole AWQ scale (checked below: the same weights with the
// pre_quant_scale dropped are far from the oracle).
// - a16 / f32 vs modelopt_awq_a16 (input quantizers disabled; TensorQuantizer still multiplies by
//   pre_quant_scale): the exported NVFP4 values and bf16 scales on both sides, float32 rounding
//   only: the 5e-5 bound of tests/test_arch_fixtures.cpp.
// - w4a4 vs modelopt_awq (W4A4 fake quant): the argument of W4A4RunsNearFakeQuantNvfp4 there
//   (E2M1 flips of activations cascade): median and max below the effect of activation
//   quantization (w4a4 vs the a16 oracle).
#include <cstdio>

#include "arch_fixtures.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

constexpr double kF32Bound = 5e-5;
const char* const kArch = "qwen2-awq";

std::string awq_dir() { return arch_root() + "/" + kArch + "/modelopt-nvfp4-awq"; }

Diff diff_of(const ArchOracle& o, const Model& m, const std::string& set, ThreadPool& pool) {
  Diff d;
  for (size_t p = 0; p < o.prompts(); ++p) {
    const auto ids = o.ids(p);
    const auto got = eval_all(m, ids, pool);
    d.add(got.data(), o.logits(p, set), ids.size(), o.nv);
  }
  return d;
}

}  // namespace

TEST(AwqFixture, OpensAsNvfp4AwqWithPreQuantScales) {
  auto ck = Checkpoint::open(awq_dir());
  EXPECT_EQ(ck->info().producer, "modelopt");
  EXPECT_EQ(ck->info().algorithm, "NVFP4_AWQ");
  int nvfp4 = 0, with_pqs = 0;
  for (const TensorEntry& e : ck->tensors()) {
    if (e.storage != Storage::nvfp4) continue;
    ++nvfp4;
    with_pqs += !ck->pre_quant_scale(e.name).empty();
  }
  EXPECT_EQ(nvfp4, 14);
  EXPECT_EQ(with_pqs, 4);  // o_proj and down_proj of 2 layers; the others are folded into the norms
}

TEST(AwqFixture, A16AndF32MatchModelOptFakeQuant) {
  const ArchOracle o(kArch);
  ThreadPool pool(2);
  auto ck = Checkpoint::open(awq_dir());
  for (Mode mode : {Mode::a16, Mode::f32}) {
    LoadOptions lo;
    lo.mode = mode;
    auto m = Model::load(*ck, lo);
    const Diff d = diff_of(o, *m, "modelopt_awq_a16", pool);
    std::printf("qwen2-awq %s vs modelopt_awq_a16: max |diff| %.3g (|logit| <= %.3g), argmax differs %d/%d\n",
                std::string(mode_name(mode)).c_str(), d.max_abs, d.max_ref, d.argmax_differ, d.argmax_checked);
    EXPECT_LE(d.max_abs, kF32Bound) << mode_name(mode);
    EXPECT_EQ(d.argmax_differ, 0) << mode_name(mode);
  }
}

TEST(AwqFixture, W4A4RunsNearFakeQuantAwq) {
  const ArchOracle o(kArch);
  ThreadPool pool(2);
  auto ck = Checkpoint::open(awq_dir());
  LoadOptions lo;
  lo.mode = Mode::w4a4;
  auto m = Model::load(*ck, lo);
  const Diff d = diff_of(o, *m, "modelopt_awq", pool);
  const Diff a16ref = diff_of(o, *m, "modelopt_awq_a16", pool);
  std::printf("qwen2-awq w4a4 vs modelopt_awq: max |diff| %.3g (median position %.3g), argmax differs %d/%d"
              " (vs a16 fake quant %.3g, median %.3g)\n", d.max_abs, d.median(), d.argmax_differ, d.argmax_checked,
              a16ref.max_abs, a16ref.median());
  EXPECT_LT(d.median(), a16ref.median());
  EXPECT_LT(d.max_abs, a16ref.max_abs);
}

// The oracle tells the pre_quant_scale apart: the same checkpoint read with its scales dropped
// (a wrapper that answers none) is far outside the bound.
namespace {
struct NoPreQuantScale : Checkpoint {
  const Checkpoint& ck;
  explicit NoPreQuantScale(const Checkpoint& c) : ck(c) {}
  const CheckpointInfo& info() const override { return ck.info(); }
  const gguf::Value* meta(const std::string& k) const override { return ck.meta(k); }
  std::vector<std::string> meta_keys() const override { return ck.meta_keys(); }
  const std::vector<TensorEntry>& tensors() const override { return ck.tensors(); }
  std::vector<float> to_f32(const std::string& n) const override { return ck.to_f32(n); }
  RowMatrix nvfp4(const std::string& n) const override { return ck.nvfp4(n); }
  std::vector<float> pre_quant_scale(const std::string&) const override { return {}; }
  bool raw_float(const std::string& n, DType& dt, const void*& d) const override { return ck.raw_float(n, dt, d); }
};
}  // namespace

TEST(AwqFixture, DroppingPreQuantScaleIsSeen) {
  const ArchOracle o(kArch);
  ThreadPool pool(2);
  auto ck = Checkpoint::open(awq_dir());
  const NoPreQuantScale bare(*ck);
  LoadOptions lo;
  lo.mode = Mode::f32;
  auto m = Model::load(bare, lo);
  const Diff d = diff_of(o, *m, "modelopt_awq_a16", pool);
  std::printf("qwen2-awq f32 without pre_quant_scale vs modelopt_awq_a16: max |diff| %.3g\n", d.max_abs);
  EXPECT_GT(d.max_abs, 100 * kF32Bound);
}

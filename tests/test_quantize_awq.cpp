// convert --quantize-method awq (convert/awq_search.cpp, weight_quantizer.cpp) on the tiny qwen2 fixture
// (fixtures/arch/qwen2/float): ModelOpt's NVFP4_AWQ form (the tensor names of a real
// export_hf_checkpoint of the same model, fixtures/arch/qwen2-awq), the runtime runs it, each
// group's chosen scales never score worse than rtn, GGUF output folds only norm-fed groups and
// refuses a checkpoint's unfolded pre_quant_scale; and every quantizer's output bytes are the same
// for 1 and 2 threads and on every ISA this CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "arch_fixtures.h"
#include "convert/awq_search.h"
#include "io_test_util.h"
#include "nvfp4/calibrate.h"
#include "nvfp4/convert.h"
#include "nvfp4/gguf.h"
#include "nvfp4/kernels.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/tokenizer.h"

using namespace nvfp4;

namespace {

const char* kText =
    "The river rose slowly through the night, and by morning the bridge was gone. "
    "def f(x):\n    return [v * 2 for v in x if v > 0]\n"
    "A model predicts the next word from the words before it; quantization stores its weights in fewer bits. "
    "The capital of France is Paris. Twelve times seven is eighty-four.";

std::string qwen2() { return test::arch_root() + "/qwen2/float"; }

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string write_text(const test::ScratchDir& d) {
  const std::string p = d.path + "/calib.txt";
  std::ofstream(p) << kText;
  return p;
}

ConvertOptions awq_options(const std::string& calib) {
  ConvertOptions o;
  o.method = "awq";
  o.calibrate = calib;
  o.calib_ctx = 32;
  o.threads = 2;
  return o;
}

struct IsaScope {
  explicit IsaScope(Isa i) { force_isa(i); }
  ~IsaScope() { clear_forced_isa(); }
};

}  // namespace

TEST(QuantizeAwq, DirectoryIsModelOptsNvfp4AwqFormAndRuns) {
  test::ScratchDir tmp;
  const std::string out = tmp.path + "/awq";
  const ConvertReport r = convert(qwen2(), out, awq_options(write_text(tmp)));
  EXPECT_EQ(r.quantized, 14);
  auto ck = Checkpoint::open(out);
  EXPECT_EQ(ck->info().algorithm, "NVFP4_AWQ");
  // The tensor names of ModelOpt's own AWQ-lite export of this model (export_hf_checkpoint): the
  // q/k/v and gate/up scales folded into the norms, pre_quant_scale on o_proj and down_proj.
  const auto ours = safetensors::File::open(out + "/model.safetensors");
  const auto theirs = safetensors::File::open(test::arch_root() + "/qwen2-awq/modelopt-nvfp4-awq/model.safetensors");
  std::set<std::string> a, b;
  for (const auto& t : ours.tensors()) a.insert(t.name);
  for (const auto& t : theirs.tensors()) {
    if (t.name.find("input_scale") == std::string::npos) b.insert(t.name);  // theirs is W4A4, ours weights only
  }
  EXPECT_EQ(a, b);
  int pqs = 0;
  for (const TensorEntry& e : ck->tensors()) {
    if (e.storage != Storage::nvfp4) continue;
    const auto p = ck->pre_quant_scale(e.name);
    const bool unfolded = e.name.find("attn_output") != std::string::npos || e.name.find("ffn_down") != std::string::npos;
    EXPECT_EQ(!p.empty(), unfolded) << e.name;
    pqs += !p.empty();
    for (float v : p) EXPECT_TRUE(std::isfinite(v) && v > 0.0f) << e.name;
  }
  EXPECT_EQ(pqs, 4);
  // The norms carry the folded scales: not the float model's any more (somewhere).
  auto fl = Checkpoint::open(qwen2());
  EXPECT_NE(ck->to_f32("blk.0.attn_norm.weight"), fl->to_f32("blk.0.attn_norm.weight"));
  ThreadPool pool(2);
  for (Mode mode : {Mode::a16, Mode::a16q8, Mode::f32}) {
    LoadOptions lo;
    lo.mode = mode;
    auto m = Model::load(*ck, lo);
    const std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
    const auto lg = test::eval_all(*m, ids, pool);
    for (float v : lg) ASSERT_TRUE(std::isfinite(v)) << mode_name(mode);
  }
}

TEST(QuantizeAwq, EveryGroupScoresNoWorseThanRtnAndSomeBetter) {
  auto ck = Checkpoint::open(qwen2());
  const Tokenizer tok = Tokenizer::from_checkpoint(*ck);
  const ChannelMoments m2 = calibrate_second_moments(*ck, tok.encode(kText, false), 32, 2);
  std::vector<std::string> notes;
  const AwqPlan p = plan_awq(*ck, m2, true, true, 2, [](const std::string&) { return true; }, notes, {});
  EXPECT_TRUE(notes.empty());
  ASSERT_EQ(p.groups.size(), 8u);  // 2 blocks x (q/k/v, o, gate/up, down)
  int better = 0;
  for (const AwqGroup& g : p.groups) {
    EXPECT_LE(g.err, g.err_rtn) << g.members.front();
    better += g.err < g.err_rtn;
    if (g.alpha == 0.0) {
      for (float s : g.s) EXPECT_EQ(s, 1.0f);
    }
  }
  EXPECT_GE(better, 4);
  // GGUF: attn_output / ffn_down cannot hold a pre_quant_scale, so they are not in the plan.
  const AwqPlan q = plan_awq(*ck, m2, false, true, 2, [](const std::string&) { return true; }, notes, {});
  EXPECT_EQ(q.groups.size(), 4u);
  for (const AwqGroup& g : q.groups) EXPECT_FALSE(g.norm.empty());
}

TEST(QuantizeAwq, GgufFoldsNormFedGroupsAndRefusesUnfoldedPreQuantScale) {
  test::ScratchDir tmp;
  const std::string calib = write_text(tmp);
  convert(qwen2(), tmp.path + "/awq.gguf", awq_options(calib));
  convert(qwen2(), tmp.path + "/rtn.gguf", ConvertOptions{});
  const auto a = gguf::File::open(tmp.path + "/awq.gguf"), r = gguf::File::open(tmp.path + "/rtn.gguf");
  const auto same = [&](const std::string& n) {
    const auto& x = a.tensor(n);
    const auto& y = r.tensor(n);
    return x.nbytes == y.nbytes && std::memcmp(x.data, y.data, static_cast<size_t>(x.nbytes)) == 0;
  };
  for (int b = 0; b < 2; ++b) {
    const std::string p = "blk." + std::to_string(b) + ".";
    EXPECT_TRUE(same(p + "attn_output.weight")) << b;  // s = 1: rtn
    EXPECT_TRUE(same(p + "ffn_down.weight")) << b;
  }
  int differ = 0;
  for (const char* n : {"blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "blk.1.attn_norm.weight", "blk.1.ffn_norm.weight"}) differ += !same(n);
  EXPECT_GE(differ, 3);  // alpha 0 (s = 1) may win a group
  // ModelOpt's AWQ export keeps pre_quant_scale on o_proj / down_proj: GGUF output refuses it.
  try {
    convert(test::arch_root() + "/qwen2-awq/modelopt-nvfp4-awq", tmp.path + "/mo.gguf", ConvertOptions{});
    ADD_FAILURE() << "converted a pre_quant_scale into GGUF";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pre_quant_scale"), std::string::npos) << e.what();
  }
  // awq without calibration text is refused.
  ConvertOptions o;
  o.method = "awq";
  EXPECT_THROW(convert(qwen2(), tmp.path + "/x.gguf", o), Error);
}

// The same inputs and calibration text give the same bytes for 1 and 2 threads and every ISA:
// search, awq and awq with the search's rounding, calibrated on the float model (default) and on
// the rtn model, GGUF and directory.
TEST(QuantizeAwq, OutputBytesAreTheSameForThreadsAndIsas) {
  test::ScratchDir tmp;
  const std::string calib = write_text(tmp);
  int runs = 0;
  for (const std::string method : {"search", "awq", "awq+search"}) {
    for (const char* on : {"float", "rtn"}) {
      for (const char* ext : {".gguf", ""}) {
        ConvertOptions o = awq_options(calib);
        o.method = method == "search" ? "search" : "awq";
        o.awq_rounding = method == "awq+search" ? "search" : "rtn";
        o.calib_model = on;
        std::string ref;
        int k = 0;
        for (int threads : {1, 2}) {
          for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
            if (!isa_supported(isa)) continue;
            IsaScope scope(isa);
            o.threads = threads;
            const std::string out = tmp.path + "/o" + std::to_string(runs) + "_" + std::to_string(k++) + ext;
            convert(qwen2(), out, o);
            const std::string bytes = *ext ? slurp(out) : slurp(out + "/model.safetensors") + slurp(out + "/hf_quant_config.json");
            ASSERT_FALSE(bytes.empty());
            if (ref.empty()) ref = bytes;
            EXPECT_TRUE(bytes == ref) << method << " calibrated on " << on << ext << ", " << threads << " threads, ISA "
                                      << isa_name(isa);
            if (*ext) std::remove(out.c_str());
          }
        }
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 12);
}

// nvfp4 convert: GGUF in (written by PyPI gguf) -> NVFP4 GGUF out. NVFP4 tensors are repacked
// byte for byte, float / ggml-quantized weights quantized by SPEC section 4 (checked against our
// quantizer on the source values), metadata carried over, options honoured, errors leave no file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/convert.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"
#include "nvfp4/layout.h"
#include "nvfp4/quantize.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/verify.h"
#include "test_util.h"

using namespace nvfp4;

namespace {
const std::string kSrc = test::fixture_path("io/py.gguf");

float f32_at(const gguf::TensorInfo& t) {
  float v;
  std::memcpy(&v, t.data, 4);
  return v;
}

int run_cli(const std::string& args) {
  const int rc = std::system((std::string(NVFP4_BINARY) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
}  // namespace

TEST(Convert, DefaultRulesOnGgufInput) {
  EXPECT_TRUE(default_quantizes("blk.0.attn_q.weight", 2));
  EXPECT_TRUE(default_quantizes("blk.3.ffn_down.weight", 2));
  EXPECT_FALSE(default_quantizes("token_embd.weight", 2));
  EXPECT_FALSE(default_quantizes("output.weight", 2));
  EXPECT_FALSE(default_quantizes("blk.0.attn_norm.weight", 1));
  EXPECT_FALSE(default_quantizes("blk.0.ffn_gate_inp.weight", 2));
  EXPECT_FALSE(default_quantizes("blk.0.attn_q.bias", 2));
  EXPECT_FALSE(default_quantizes("blk.0.ffn_up_exps.weight", 3));
}

TEST(Convert, GgufToNvfp4GgufQuantizesRepacksAndCarriesMetadata) {
  test::ScratchDir dir;
  ConvertOptions opt;
  opt.verify = true;
  opt.threads = 3;
  const ConvertReport r = convert(kSrc, dir / "out.gguf", opt);
  EXPECT_EQ(r.quantized, 1);  // blk.0.ffn_up.weight (Q8_0)
  EXPECT_EQ(r.repacked, 1);   // blk.0.ffn_down.weight (NVFP4)
  EXPECT_EQ(r.kept, 2);       // token_embd (F32), output_norm (F16)
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.gguf"});

  const auto src = gguf::File::open(kSrc);
  const auto out = gguf::File::open(dir / "out.gguf");
  EXPECT_EQ(out.get("general.file_type").as_int(), 39);
  for (const auto& [k, v] : src.metadata()) {
    const gguf::Value* o = out.find(k);
    ASSERT_NE(o, nullptr) << k;
    EXPECT_EQ(o->type, v.type) << k;
    EXPECT_EQ(o->s, v.s) << k;
    EXPECT_EQ(o->u, v.u) << k;
    EXPECT_EQ(o->i, v.i) << k;
    EXPECT_EQ(o->arr.size(), v.arr.size()) << k;
    EXPECT_TRUE(o->arr == v.arr) << k;
  }
  // Repacked: the very same blocks and tensor scale.
  const auto& sd = src.tensor("blk.0.ffn_down.weight");
  const auto& od = out.tensor("blk.0.ffn_down.weight");
  ASSERT_EQ(od.nbytes, sd.nbytes);
  EXPECT_EQ(std::memcmp(od.data, sd.data, static_cast<size_t>(sd.nbytes)), 0);
  EXPECT_EQ(f32_at(out.tensor("blk.0.ffn_down.scale")), 0.03125f);
  // Quantized: the Q8_0 source dequantized, then SPEC section 4, as ggml blocks.
  const auto& su = src.tensor("blk.0.ffn_up.weight");
  std::vector<float> w(128);
  for (int r = 0; r < 2; ++r) ggml_dequantize_row(ggml::Q8_0, su.data + r * 68, w.data() + r * 64, 64);
  const RowMatrix m = quantize(w.data(), 2, 64, "up");
  const GgmlMatrix g = row_to_ggml(m.view());
  const auto& ou = out.tensor("blk.0.ffn_up.weight");
  EXPECT_EQ(ou.type, ggml::NVFP4);
  EXPECT_EQ(ou.ne, su.ne);
  ASSERT_EQ(static_cast<size_t>(ou.nbytes), g.blocks.size());
  EXPECT_EQ(std::memcmp(ou.data, g.blocks.data(), g.blocks.size()), 0);
  EXPECT_EQ(f32_at(out.tensor("blk.0.ffn_up.scale")), m.scale2);
  // Copied as they are.
  for (const char* n : {"token_embd.weight", "output_norm.weight"}) {
    const auto& a = src.tensor(n);
    const auto& b = out.tensor(n);
    EXPECT_EQ(a.type, b.type) << n;
    EXPECT_EQ(std::memcmp(a.data, b.data, static_cast<size_t>(a.nbytes)), 0) << n;
  }
  // The result loads as an NVFP4 checkpoint.
  const auto ck = Checkpoint::open(dir / "out.gguf");
  EXPECT_EQ(ck->tensor("blk.0.ffn_up.weight").storage, Storage::nvfp4);
  EXPECT_EQ(ck->info().algorithm, "W4A16_NVFP4");

  // Converting the output again changes nothing: every NVFP4 tensor is repacked, not requantized.
  const ConvertReport r2 = convert(dir / "out.gguf", dir / "again.gguf", opt);
  EXPECT_EQ(r2.quantized, 0);
  EXPECT_EQ(r2.repacked, 2);
  const auto again = gguf::File::open(dir / "again.gguf");
  for (const auto& t : out.tensors()) {
    const auto& a = again.tensor(t.name);
    ASSERT_EQ(a.nbytes, t.nbytes) << t.name;
    EXPECT_EQ(std::memcmp(a.data, t.data, static_cast<size_t>(t.nbytes)), 0) << t.name;
  }
}

TEST(Convert, KeepQuantizeAndKeepTypeOptions) {
  test::ScratchDir dir;
  ConvertOptions opt;
  opt.keep = {"blk.*.ffn_up.*"};
  opt.keep_type = "bf16";
  const ConvertReport r = convert(kSrc, dir / "k.gguf", opt);
  EXPECT_EQ(r.quantized, 0);
  EXPECT_EQ(r.retyped, 1);  // Q8_0 kept matrix -> bf16
  const auto out = gguf::File::open(dir / "k.gguf");
  EXPECT_EQ(out.tensor("blk.0.ffn_up.weight").type, ggml::BF16);
  EXPECT_EQ(out.find_tensor("blk.0.ffn_up.scale"), nullptr);

  // --quantize on a tensor whose rows do not fit 64-value blocks is refused; no file appears.
  ConvertOptions bad;
  bad.quantize = {"token_embd.weight"};
  try {
    convert(kSrc, dir / "bad.gguf", bad);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.tensor(), "token_embd.weight");
    EXPECT_EQ(e.rule(), "cannot store this tensor as ggml NVFP4 blocks");
  }
  EXPECT_FALSE(test::exists(dir / "bad.gguf"));
  EXPECT_THROW(convert(kSrc, dir / "x.safetensors", ConvertOptions{}), Error);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"k.gguf"});
}

TEST(Convert, RefusedInputLeavesNoOutput) {
  test::ScratchDir dir;
  EXPECT_THROW(convert(test::fixture_path("gguf/bad_byte_nan.gguf"), dir / "o.gguf", ConvertOptions{}), Error);
  // An HF directory naming a tokenizer GGUF that is not one.
  ConvertOptions bad_tok;
  bad_tok.tokenizer = test::fixture_path("hf/float/config.json");
  EXPECT_THROW(convert(test::fixture_path("hf/modelopt"), dir / "o.gguf", bad_tok), Error);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(Convert, CliExitCodes) {
  test::ScratchDir dir;
  EXPECT_EQ(run_cli("convert " + kSrc + " " + (dir / "c.gguf") + " --verify"), 0);
  EXPECT_TRUE(test::exists(dir / "c.gguf"));
  EXPECT_EQ(run_cli("convert " + test::fixture_path("gguf/bad_byte_sign.gguf") + " " + (dir / "d.gguf")), 1);
  EXPECT_FALSE(test::exists(dir / "d.gguf"));
  EXPECT_EQ(run_cli("convert " + kSrc), 2);
  EXPECT_EQ(run_cli("convert " + kSrc + " " + (dir / "e.gguf") + " --keep-type f8"), 2);
}

#if !defined(NVFP4_SANITIZED)
TEST(Convert, RealSmolLM2ToNvfp4Verified) {
  const char* path = std::getenv("NVFP4_SMOLLM2_GGUF");
  if (!path || !test::exists(path)) GTEST_SKIP() << "NVFP4_SMOLLM2_GGUF not set";
  test::ScratchDir dir;
  ConvertOptions opt;
  opt.verify = true;
  const ConvertReport r = convert(path, dir / "smol.gguf", opt);
  EXPECT_EQ(r.quantized, 30 * 7);  // 30 blocks x q, k, v, o, gate, up, down
  EXPECT_EQ(r.retyped, 0);         // the default head (--head auto): the Q8_0 embedding copied
  const auto ck = Checkpoint::open(dir / "smol.gguf");
  EXPECT_EQ(ck->tensor("blk.29.ffn_down.weight").storage, Storage::nvfp4);
  EXPECT_EQ(ck->tensor("token_embd.weight").storage_name, "Q8_0");
  opt.head = "f16";
  const ConvertReport r16 = convert(path, dir / "smol16.gguf", opt);
  EXPECT_EQ(r16.retyped, 1);  // the Q8_0 embedding -> f16 (--keep-type)
  EXPECT_EQ(Checkpoint::open(dir / "smol16.gguf")->tensor("token_embd.weight").storage_name, "F16");
}
#endif

namespace {
struct ScratchTree : test::ScratchDir {
  ~ScratchTree() { std::filesystem::remove_all(path); }
};
}  // namespace

TEST(ConvertDir, ModelOptRoundTripRestoresHfBytesAndOrder) {
  ScratchTree dir;
  ConvertOptions opt;
  opt.verify = true;
  const std::string src = test::fixture_path("hf/modelopt");
  const ConvertReport r = convert(src, dir / "out", opt);
  EXPECT_EQ(r.repacked, 7);
  EXPECT_EQ(r.quantized, 0);
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out"});  // no temporary directory left
  EXPECT_TRUE(verify_checkpoints(src, dir / "out").same);
  // The HF bytes of q_proj (un-permuted back) equal the ModelOpt export's, shard or not.
  const auto ours = safetensors::File::open(dir / "out/model.safetensors");
  const auto s1 = safetensors::File::open(src + "/model-00001-of-00002.safetensors");
  const auto s2 = safetensors::File::open(src + "/model-00002-of-00002.safetensors");
  int compared = 0;
  for (const auto* shard : {&s1, &s2}) {
    for (const auto& a : shard->tensors()) {
      const auto& b = ours.tensor(a.name);
      EXPECT_EQ(a.dtype, b.dtype) << a.name;
      EXPECT_EQ(a.shape, b.shape) << a.name;
      ASSERT_EQ(a.nbytes(), b.nbytes()) << a.name;
      EXPECT_EQ(std::memcmp(a.data, b.data, static_cast<size_t>(a.nbytes())), 0) << a.name;
      ++compared;
    }
  }
  EXPECT_EQ(compared, static_cast<int>(ours.tensors().size()));  // every tensor, byte for byte
  std::ifstream hq(dir / "out/hf_quant_config.json");
  const auto j = nlohmann::json::parse(hq);
  EXPECT_EQ(j["quantization"]["quant_algo"], "NVFP4");
  EXPECT_EQ(j["quantization"]["exclude_modules"], nlohmann::json::array({"lm_head"}));
  // An existing, non-empty output directory is refused.
  EXPECT_THROW(convert(src, dir / "out", opt), Error);
}

TEST(ConvertDir, FloatDirQuantizedInHfOrderAndGgufMatches) {
  ScratchTree dir;
  ConvertOptions opt;
  opt.verify = true;
  opt.scale2 = "per-tensor";  // q_proj's own tensor scale (the fused default: test_quantize_search.cpp)
  const ConvertReport r = convert(test::fixture_path("hf/float"), dir / "q", opt);
  EXPECT_EQ(r.quantized, 7);
  const auto src = safetensors::File::open(test::fixture_path("hf/float/model.safetensors"));
  const auto& w = src.tensor("model.layers.0.self_attn.q_proj.weight");
  std::vector<float> v(static_cast<size_t>(w.elements()));
  safetensors::to_float(w, v.data());
  const RowMatrix m = quantize(v.data(), 64, 64, "q");
  const auto out = safetensors::File::open(dir / "q/model.safetensors");
  const auto& c = out.tensor("model.layers.0.self_attn.q_proj.weight");
  ASSERT_EQ(static_cast<size_t>(c.nbytes()), m.codes.size());
  EXPECT_EQ(std::memcmp(c.data, m.codes.data(), m.codes.size()), 0);
  float s2;
  std::memcpy(&s2, out.tensor("model.layers.0.self_attn.q_proj.weight_scale_2").data, 4);
  EXPECT_EQ(s2, m.scale2);
  // GGUF in -> GGUF out and GGUF in -> directory out hold the same NVFP4 weights.
  convert(test::fixture_path("io/py.gguf"), dir / "a.gguf", opt);
  convert(test::fixture_path("io/py.gguf"), dir / "a_dir", opt);
  const auto same = verify_checkpoints(dir / "a.gguf", dir / "a_dir");
  EXPECT_TRUE(same.same) << same.difference;
}

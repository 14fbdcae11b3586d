// FP8 layers whose scale varies along the input, as the real producers write them
// (tools/gen_scaled_fp8_fixtures.py): MXFP8 (ModelOpt quant_algo MXFP8 and inside
// MIXED_PRECISION, compressed-tensors mxfp8-quantized groups) and FP8 with 128 x 128 block scales
// (llm-compressor FP8_BLOCK, ModelOpt fp8_pb_wo, DeepSeek's weight_scale_inv):
// - each layer is kept as stored (storage MXFP8 / F8_E4M3 128x128; 1 byte a weight in the model);
// - f32 logits against transformers on the weights dequantized with numpy / ml_dtypes
//   (tools/mixed_reference.py --scaled), within the FP8 fixtures' bound, and the same greedy ids;
// - bad scales are refused naming the file, the tensor, the rule, what was expected and found;
// - CSF-compressed NVFP4 block scales (tools/gen_csf_fixture.py) decode to the plain bytes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "io_test_util.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/model.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/thread_pool.h"
#include "test_util.h"
#include "st_variant.h"

using namespace nvfp4;
using nvfp4::test::stv::Tensors;
using nvfp4::test::stv::Tree;
namespace stv = nvfp4::test::stv;
namespace st = nvfp4::safetensors;
namespace fs = std::filesystem;

namespace {

struct Form {
  const char* dir;
  const char* probe;    // an HF module of the scaled form
  const char* canon;    // its canonical name
  const char* storage;  // TensorEntry::storage_name
};
const Form kForms[] = {
    {"modelopt-mxfp8", "model.layers.0.mlp.down_proj", "blk.0.ffn_down.weight", "MXFP8"},
    {"modelopt-mxfp8-mix", "model.layers.1.self_attn.o_proj", "blk.1.attn_output.weight", "MXFP8"},
    {"ct-mxfp8", "model.layers.0.self_attn.q_proj", "blk.0.attn_q.weight", "MXFP8"},
    {"ct-fp8-block", "model.layers.0.self_attn.q_proj", "blk.0.attn_q.weight", "F8_E4M3 128x128"},
    {"modelopt-fp8-block", "model.layers.1.mlp.down_proj", "blk.1.ffn_down.weight", "F8_E4M3 128x128"},
    {"deepseek-fp8-block", "model.layers.0.mlp.down_proj", "blk.0.ffn_down.weight", "F8_E4M3 128x128"},
};

std::string dir_of(const std::string& form) { return test::fixture_path("mixed/qwen3/" + form); }

std::string variant(const std::string& out, const std::string& form, const std::function<void(Tensors&)>& edit) {
  return stv::variant(out, edit, "mixed/qwen3/" + form);
}

// Opening and loading `dir` fails with an Error naming the tensor and holding each text.
void expect_refused(const std::string& dir, const std::string& tensor, const std::vector<std::string>& texts) {
  try {
    const auto ck = Checkpoint::open(dir);
    LoadOptions lo;
    lo.mode = Mode::f32;
    Model::load(*ck, lo);
    FAIL() << dir << ": accepted";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_EQ(e.tensor(), tensor) << w;
    EXPECT_NE(e.file().find("model.safetensors"), std::string::npos) << w;
    EXPECT_FALSE(e.rule().empty() || e.expected().empty() || e.found().empty()) << w;
    for (const auto& t : texts) EXPECT_NE(w.find(t), std::string::npos) << "'" << t << "' not in: " << w;
  }
}

}  // namespace

TEST(ScaledFp8, EachLayerKeptAsStored) {
  for (const Form& f : kForms) {
    const auto ck = Checkpoint::open(dir_of(f.dir));
    const TensorEntry& e = ck->tensor(f.canon);
    EXPECT_EQ(e.storage, Storage::fp8) << f.dir;
    EXPECT_EQ(e.storage_name, f.storage) << f.dir;
    DType dt = DType::f32;
    const uint8_t* codes = nullptr;
    const void* scales = nullptr;
    ASSERT_TRUE(ck->raw_fp8_scaled(f.canon, dt, codes, scales)) << f.dir;
    EXPECT_EQ(dt, std::string(f.storage) == "MXFP8" ? DType::mxfp8 : DType::fp8_b128) << f.dir;
  }
}

TEST(ScaledFp8, F32LogitsMatchTransformersOnTheDequantizedWeights) {
  std::ifstream in(test::fixture_path("mixed/qwen3/reference_scaled.json"));
  ASSERT_TRUE(in);
  const auto ref = nlohmann::json::parse(in);
  for (const Form& f : kForms) {
    ASSERT_TRUE(ref.contains(f.dir)) << f.dir;
    const auto& r = ref[f.dir];
    const auto ids = r["ids"].get<std::vector<int32_t>>();
    const auto ck = Checkpoint::open(dir_of(f.dir));
    LoadOptions lo;
    lo.mode = Mode::f32;
    const auto m = Model::load(*ck, lo);
    std::string desc;
    for (const auto& l : m->describe()) desc += l + "\n";
    EXPECT_NE(desc.find(std::string(f.storage) == "MXFP8" ? "MXFP8 (E4M3 bytes and an E8M0 scale per 32" : "128x128 block scales (as stored)"),
              std::string::npos)
        << desc;
    ThreadPool pool(2);
    ContextOptions co;
    co.n_ctx = 32;
    co.kv = KvType::f32;
    const size_t nv = static_cast<size_t>(m->config().n_vocab);
    {
      Context ctx(*m, co, pool);
      std::vector<float> lg(ids.size() * nv);
      ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), lg.data(), true);
      double worst = 0;
      for (size_t p = 0; p < ids.size(); ++p)
        for (size_t v = 0; v < nv; ++v) worst = std::max(worst, std::abs(static_cast<double>(lg[p * nv + v]) - r["logits"][p][v].get<double>()));
      // Both sides run float32 on identical weights; only the order of the sums differs (the
      // bound of the FP8 / NVFP4 mixed fixtures, test_mixed_checkpoints.cpp).
      EXPECT_LT(worst, 2e-3) << f.dir;
    }
    Context ctx(*m, co, pool);
    std::vector<float> row(nv);
    ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), row.data());
    std::vector<int32_t> greedy;
    for (int k = 0; k < 8; ++k) {
      const int32_t t = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
      greedy.push_back(t);
      ctx.eval(&t, 1, row.data());
    }
    EXPECT_EQ(greedy, r["greedy"].get<std::vector<int32_t>>()) << f.dir;
  }
}

TEST(ScaledFp8, MxFp8BadScalesRefusedByName) {
  Tree tmp;
  const std::string m = "model.layers.0.self_attn.q_proj";  // [128, 64]: scales U8 [128, 2]
  const auto set_byte = [&](uint8_t b) {
    return [m, b](Tensors& t) { t.at(m + ".weight_scale").second.second[5] = b; };
  };
  expect_refused(variant(tmp.d / "nan", "ct-mxfp8", set_byte(0xFF)), m + ".weight_scale",
                 {"E8M0 scale is NaN (byte 0xFF)", "bytes 0..246", "byte 255 at row 2, block 1"});
  expect_refused(variant(tmp.d / "big", "modelopt-mxfp8", set_byte(247)), m + ".weight_scale",
                 {"overflow float32", "byte 247 at row 2, block 1"});
  expect_refused(variant(tmp.d / "shape", "modelopt-mxfp8",
                         [&](Tensors& t) {
                           auto& s = t.at(m + ".weight_scale");
                           s.second.first = {64, 4};
                         }),
                 m + ".weight_scale", {"MXFP8 scale shape", "[128, 2]", "[64, 4]"});
  expect_refused(variant(tmp.d / "dtype", "modelopt-mxfp8",
                         [&](Tensors& t) {
                           auto& s = t.at(m + ".weight_scale");
                           s.first = st::Dtype::BF16;
                           s.second.first = {128, 1};
                         }),
                 m + ".weight_scale", {"E8M0 exponents stored as U8", "BF16"});
  expect_refused(variant(tmp.d / "nanw", "modelopt-mxfp8", [&](Tensors& t) { t.at(m + ".weight").second.second[70] = 0x7F; }),
                 m + ".weight", {"no NaN byte", "row 1, column 6"});
}

TEST(ScaledFp8, BlockBadScalesRefusedByName) {
  Tree tmp;
  // deepseek-fp8-block: down_proj [160, 288], weight_scale_inv F32 [2, 3] (edges 32 high, 32 wide).
  const std::string m = "model.layers.0.mlp.down_proj";
  const auto set_f32 = [&](size_t k, float v) {
    return [m, k, v](Tensors& t) { std::memcpy(t.at(m + ".weight_scale_inv").second.second.data() + 4 * k, &v, 4); };
  };
  expect_refused(variant(tmp.d / "nan", "deepseek-fp8-block", set_f32(4, std::nanf(""))), m + ".weight_scale_inv",
                 {"FP8 block scale must be finite and positive", "nan at block row 1, column 1"});
  expect_refused(variant(tmp.d / "inf", "deepseek-fp8-block", set_f32(5, INFINITY)), m + ".weight_scale_inv",
                 {"finite and positive", "inf at block row 1, column 2"});
  expect_refused(variant(tmp.d / "zero", "deepseek-fp8-block", set_f32(0, 0.0f)), m + ".weight_scale_inv",
                 {"finite and positive", "0 at block row 0, column 0"});
  expect_refused(variant(tmp.d / "shape", "deepseek-fp8-block",
                         [&](Tensors& t) {
                           auto& s = t.at(m + ".weight_scale_inv");
                           s.second.first = {3, 2};
                         }),
                 m + ".weight_scale_inv", {"one per 128 x 128 block", "[2, 3]", "[3, 2]"});
  expect_refused(variant(tmp.d / "e8m0", "deepseek-fp8-block",
                         [&](Tensors& t) {
                           auto& s = t.at(m + ".weight_scale_inv");
                           s.first = st::Dtype::U8;
                           s.second.second.assign(6, 120);
                           s.second.second[3] = 0xFF;
                         }),
                 m + ".weight_scale_inv", {"E8M0 scale is NaN (byte 0xFF)", "byte 255 at block row 1, column 0"});
  expect_refused(variant(tmp.d / "nanw", "ct-fp8-block", [&](Tensors& t) { t.at(m + ".weight").second.second[129] = 0xFF; }),
                 m + ".weight", {"no NaN byte", "row 1, column 1"});
}

// DeepSeek-V4 ships UE8M0 block scales: the same powers of two stored as E8M0 bytes give the same
// logits, bit for bit, as F32 scales holding them.
TEST(ScaledFp8, BlockE8m0ScalesEqualTheirF32) {
  Tree tmp;
  std::vector<std::string> dirs;
  for (const bool e8m0 : {false, true}) {
    dirs.push_back(variant(tmp.d / (e8m0 ? "u8" : "f32"), "deepseek-fp8-block", [e8m0](Tensors& t) {
      for (auto& [n, x] : t) {
        if (n.size() < 17 || n.compare(n.size() - 17, 17, ".weight_scale_inv") != 0) continue;
        const size_t k = x.second.second.size() / 4;
        std::vector<uint8_t> b(e8m0 ? k : 4 * k);
        for (size_t i = 0; i < k; ++i) {
          float v;
          std::memcpy(&v, x.second.second.data() + 4 * i, 4);
          int e;
          std::frexp(v, &e);  // v in [2^(e-1), 2^e): rounded down to 2^(e-1)
          if (e8m0) b[i] = static_cast<uint8_t>(e - 1 + 127);
          else {
            const float p = std::ldexp(1.0f, e - 1);
            std::memcpy(b.data() + 4 * i, &p, 4);
          }
        }
        x.first = e8m0 ? st::Dtype::U8 : st::Dtype::F32;
        x.second.second = b;
      }
    }));
  }
  const auto logits = [](const std::string& d, Mode mode) {
    const auto ck = Checkpoint::open(d);
    LoadOptions lo;
    lo.mode = mode;
    const auto m = Model::load(*ck, lo);
    ThreadPool pool(2);
    ContextOptions co;
    co.n_ctx = 16;
    Context ctx(*m, co, pool);
    std::vector<int32_t> ids = {17, 250, 3, 99};
    std::vector<float> out(ids.size() * static_cast<size_t>(m->config().n_vocab));
    ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), out.data(), true);
    return out;
  };
  for (const Mode mode : {Mode::f32, Mode::a16q8}) {  // the float kernel and the integer-exact one
    const auto a = logits(dirs[0], mode), b = logits(dirs[1], mode);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << mode_name(mode);
  }
}

// In a16q8 every scaled form runs the integer-exact FP8 kernel (kernels/fp8_q8.h: MXFP8's E8M0
// powers of two, or each 128 x 128 block's F32 scale, times each 32-block's exact sum): the load
// log says so, and the logits stay near transformers' on the dequantized weights (the input
// quantized to 8 bits per 256-block: a relative error near 1e-2, as the FP8 fixtures' a16q8).
TEST(ScaledFp8, A16q8RunsIntegerExactNearTransformers) {
  std::ifstream in(test::fixture_path("mixed/qwen3/reference_scaled.json"));
  ASSERT_TRUE(in);
  const auto ref = nlohmann::json::parse(in);
  for (const Form& f : kForms) {
    const auto& r = ref[f.dir];
    const auto ids = r["ids"].get<std::vector<int32_t>>();
    const auto ck = Checkpoint::open(dir_of(f.dir));
    LoadOptions lo;
    lo.mode = Mode::a16q8;
    const auto m = Model::load(*ck, lo);
    std::string desc;
    for (const auto& l : m->describe()) desc += l + "\n";
    EXPECT_NE(desc.find(std::string(f.storage) == "MXFP8" ? " MXFP8)" : " with 128x128 block scales)"), std::string::npos) << desc;
    EXPECT_NE(desc.find("FP8 kernel fp8_q8_"), std::string::npos) << desc;
    ThreadPool pool(2);
    ContextOptions co;
    co.n_ctx = 32;
    Context ctx(*m, co, pool);
    const size_t nv = static_cast<size_t>(m->config().n_vocab);
    std::vector<float> lg(ids.size() * nv);
    ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), lg.data(), true);
    double worst = 0, range = 0;
    for (size_t p = 0; p < ids.size(); ++p)
      for (size_t v = 0; v < nv; ++v) {
        const double want = r["logits"][p][v].get<double>();
        worst = std::max(worst, std::abs(static_cast<double>(lg[p * nv + v]) - want));
        range = std::max(range, std::abs(want));
      }
    EXPECT_LT(worst, 0.05 * range) << f.dir;
    EXPECT_GT(worst, 0.0) << f.dir;  // (8-bit inputs: not the float32 result)
  }
}

// CSF-compressed NVFP4 block scales (tools/gen_csf_fixture.py: modelopt-mixed with its MLP scales
// CSF-encoded, exceptions included) decode to the plain E4M3 bytes: the same scales, byte for
// byte, and the same logits, bit for bit, in every mode.
TEST(CsfScales, DecodeToThePlainScalesAndTheSameLogits) {
  const std::string plain = dir_of("modelopt-mixed"), csf = dir_of("modelopt-mixed-csf");
  const auto a = Checkpoint::open(plain), b = Checkpoint::open(csf);
  for (const char* t : {"blk.0.ffn_up.weight", "blk.1.ffn_down.weight", "blk.1.ffn_gate.weight"})
    EXPECT_EQ(a->nvfp4(t).scales, b->nvfp4(t).scales) << t;
  for (const Mode mode : {Mode::f32, Mode::a16q8}) {
    std::vector<std::vector<float>> out;
    for (const auto* ck : {a.get(), b.get()}) {
      LoadOptions lo;
      lo.mode = mode;
      const auto m = Model::load(*ck, lo);
      ThreadPool pool(2);
      ContextOptions co;
      co.n_ctx = 16;
      Context ctx(*m, co, pool);
      std::vector<int32_t> ids = {17, 250, 3, 99, 402, 7};
      out.emplace_back(ids.size() * static_cast<size_t>(m->config().n_vocab));
      ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), out.back().data(), true);
    }
    ASSERT_EQ(out[0].size(), out[1].size());
    EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * 4), 0) << mode_name(mode);
  }
}

TEST(CsfScales, BadStreamsRefusedByName) {
  Tree tmp;
  const std::string m = "model.layers.0.mlp.up_proj.weight_scale";  // [128, 4]: fixed U8 [8, 48]
  const std::string f = m + ".nvfp4_csf_fixed", e = m + ".nvfp4_csf_exceptions";
  expect_refused(variant(tmp.d / "base", "modelopt-mixed-csf", [&](Tensors& t) { t.at(f).second.second[48 + 3] = 241; }), f,
                 {"a row's base byte", "0..240", "241 at row 19"});
  expect_refused(variant(tmp.d / "shape", "modelopt-mixed-csf", [&](Tensors& t) { t.at(f).second.first = {16, 24}; }), f,
                 {"fixed stream for a 128 x 4 scale matrix", "U8 [8, 48]", "U8 [16, 24]"});
  expect_refused(variant(tmp.d / "order", "modelopt-mixed-csf",
                         [&](Tensors& t) {
                           auto& b = t.at(e).second.second;
                           std::swap_ranges(b.begin(), b.begin() + 4, b.begin() + 4);  // words 0 and 1 swapped
                         }),
                 e, {"sorted, unique and inside the matrix", "at word 1"});
  expect_refused(variant(tmp.d / "range", "modelopt-mixed-csf",
                         [&](Tensors& t) {
                           auto& b = t.at(e).second.second;
                           const uint32_t w = (0x38u << 24) | 512u;  // position 512 of a 128 x 4 matrix
                           std::memcpy(b.data() + b.size() - 4, &w, 4);
                         }),
                 e, {"position 512"});
  expect_refused(variant(tmp.d / "alone", "modelopt-mixed-csf", [&](Tensors& t) { t.erase(e); }), f, {"without its partner"});
}

// `inspect` names each layer's form as stored (every command on these forms: test_cli_formats.cpp;
// the DeepSeek form's 160-wide rows do not convert to llama.cpp's NVFP4, so it is checked here).
TEST(ScaledFp8, InspectNamesEachForm) {
  for (const Form& f : kForms) {
    const std::string cmd = std::string(NVFP4_BINARY) + " inspect " + dir_of(f.dir) + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ASSERT_EQ(::pclose(p), 0) << out;
    bool found = false;
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);)
      found |= l.rfind(f.canon, 0) == 0 && l.find(f.storage) != std::string::npos;
    EXPECT_TRUE(found) << f.dir << ": no line '" << f.canon << " ... " << f.storage << "' in\n" << out;
  }
}

// `convert` of a release with parts the engine sets aside (Qwen3.5's vision tower and MTP layer,
// Nemotron 3 Super's MTP module): a directory output keeps them byte for byte under their own
// names, excluded from the quantization as NVIDIA's releases keep them, so the NVFP4 output still
// drafts with its BF16 MTP module (`--spec mtp` gives the plain tokens); a GGUF output says what
// it leaves out.
#include "io_test_util.h"
#include "mtp_checks.h"
#include "nvfp4/convert.h"
#include "nvfp4/safetensors.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

struct Release {
  const char* dir;
  size_t parts;  // set-aside parts
};

class ConvertSetAside : public ::testing::TestWithParam<Release> {};

TEST_P(ConvertSetAside, DirectoryKeepsThemAndStillDrafts) {
  const std::string in = fixture_path(GetParam().dir);
  ScratchDir tmp;
  const std::string out = tmp / "q";
  ConvertOptions co;
  co.verify = true;
  const ConvertReport r = convert(in, out, co);
  EXPECT_TRUE(r.verified);
  EXPECT_GT(r.quantized, 0);
  size_t noted = 0;
  for (const auto& n : r.notes) noted += n.find("kept as stored, not quantized") != std::string::npos;
  EXPECT_EQ(noted, GetParam().parts);
  // Every set-aside tensor byte for byte under its own name.
  const auto src = safetensors::File::open(in + "/model.safetensors");
  const auto dst = safetensors::File::open(out + "/model.safetensors");
  size_t kept = 0;
  for (const auto& t : src.tensors()) {
    if (t.name.rfind("mtp.", 0) != 0 && t.name.rfind("model.visual.", 0) != 0) continue;
    const auto& o = dst.tensor(t.name);
    EXPECT_EQ(o.dtype, t.dtype) << t.name;
    EXPECT_EQ(o.shape, t.shape) << t.name;
    ASSERT_EQ(o.nbytes(), t.nbytes()) << t.name;
    EXPECT_EQ(0, std::memcmp(o.data, t.data, static_cast<size_t>(t.nbytes()))) << t.name;
    ++kept;
  }
  EXPECT_GT(kept, 10u);
  std::ifstream qf(out + "/hf_quant_config.json");
  const nlohmann::json q = nlohmann::json::parse(qf);
  const auto ex = q["quantization"]["exclude_modules"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(ex.begin(), ex.end(), "mtp*"), ex.end());
  auto plain = Checkpoint::open(out);
  EXPECT_EQ(plain->info().set_aside.size(), GetParam().parts);
  // The NVFP4 trunk drafts with its BF16 module: the plain tokens.
  auto ck = open_mtp(out);
  auto m = load_mtp(*ck, Mode::a16q8);
  bool float_module = false;
  for (const std::string& s : m->describe()) float_module |= s.find("MTP module") != std::string::npos && s.find(" 0 NVFP4 and ") != std::string::npos;
  EXPECT_TRUE(float_module);
  expect_mtp_speculation_is_plain(out, false);
}

INSTANTIATE_TEST_SUITE_P(Releases, ConvertSetAside,
                         ::testing::Values(Release{"hybrid/qwen3_5/float-vlm", 2}, Release{"nemotron_h/nemotron3_latent/float-mtp", 1}),
                         [](const auto& i) { return std::string(i.param.dir).substr(0, std::string(i.param.dir).find('/')); });

TEST(ConvertSetAside, GgufOutputSaysWhatItLeavesOut) {
  ScratchDir tmp;
  ConvertOptions co;
  const ConvertReport r = convert(fixture_path("nemotron_h/nemotron3_latent/float-mtp"), tmp / "m.gguf", co);
  size_t noted = 0;
  for (const auto& n : r.notes) noted += n.find("left out of the GGUF: multi-token-prediction (MTP) layers") != std::string::npos;
  EXPECT_EQ(noted, 1u);
  auto ck = Checkpoint::open(tmp / "m.gguf");
  EXPECT_EQ(ck->find("blk.6.attn_q.weight"), nullptr);
}

}  // namespace

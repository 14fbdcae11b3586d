// Bad Qwen3.5 / Qwen3.6 / Qwen3-Next inputs are refused before any inference, naming the
// config.json key (or the tensor) and the value found: an unknown layer type, layer types off the
// full-attention interval, a conv kernel size or recurrent-state dtype this runtime does not run,
// value heads that do not divide among the key heads, a missing A_log or dt_bias. Each case is the
// committed float qwen3_5 fixture with one thing changed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "test_util.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/model.h"
#include "nvfp4/safetensors.h"

using namespace nvfp4;
using namespace nvfp4::test;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = fixture_path("hybrid") + "/qwen3_5/float";

// The fixture copied into dir with config.json edited by `edit` and the tensors named in `drop` left out.
void variant(const std::string& dir, const std::function<void(nlohmann::json&)>& edit, const std::vector<std::string>& drop = {}) {
  for (const auto& e : fs::directory_iterator(kSrc))
    if (e.path().filename() != "model.safetensors" && e.path().filename() != "config.json")
      fs::copy_file(e.path(), fs::path(dir) / e.path().filename());
  std::ifstream in(kSrc + "/config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  edit(c);
  std::ofstream(dir + "/config.json") << c.dump(2);
  const auto f = safetensors::File::open(kSrc + "/model.safetensors");
  std::vector<safetensors::WriteTensor> w;
  for (const auto& t : f.tensors())
    if (std::find(drop.begin(), drop.end(), t.name) == drop.end())
      w.push_back({t.name, t.dtype, t.shape, t.data, static_cast<size_t>(t.nbytes())});
  safetensors::write(dir + "/model.safetensors", w, f.metadata());
}

// Opening and loading the variant fails with an nvfp4::Error whose text holds every one of `want`.
void refused(const std::function<void(nlohmann::json&)>& edit, const std::vector<std::string>& want,
             const std::vector<std::string>& drop = {}) {
  ScratchDir d;
  variant(d.path, edit, drop);
  try {
    auto ck = Checkpoint::open(d.path);
    LoadOptions lo;
    lo.mode = Mode::f32;
    Model::load(*ck, lo);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    const std::string w = e.what();
    for (const auto& s : want) EXPECT_NE(w.find(s), std::string::npos) << "'" << s << "' not in: " << w;
  }
}

TEST(HybridConfig, TheFixtureItselfLoads) {
  ScratchDir d;
  variant(d.path, [](nlohmann::json&) {});
  auto ck = Checkpoint::open(d.path);
  LoadOptions lo;
  lo.mode = Mode::f32;
  EXPECT_EQ(Model::load(*ck, lo)->config().arch, "qwen3_5");
}

TEST(HybridConfig, UnknownLayerTypeIsRefusedByKeyAndValue) {
  refused([](nlohmann::json& c) { c["layer_types"][1] = "mamba"; }, {"layer_types[1]", "mamba"});
}

TEST(HybridConfig, LayerTypesOffTheIntervalAreRefused) {
  refused([](nlohmann::json& c) { c["layer_types"] = {"full_attention", "linear_attention", "linear_attention", "full_attention"}; },
          {"layer_types[1]", "full_attention_interval 1"});
}

TEST(HybridConfig, ConvKernelOutOfRangeIsRefused) {
  refused([](nlohmann::json& c) { c["linear_conv_kernel_dim"] = 9; }, {"linear_conv_kernel_dim", "9"});
}

TEST(HybridConfig, StateDtypeOtherThanFloat32IsRefused) {
  refused([](nlohmann::json& c) { c["mamba_ssm_dtype"] = "bfloat16"; }, {"mamba_ssm_dtype", "bfloat16"});
}

TEST(HybridConfig, ValueHeadsThatDoNotDivideAreRefused) {
  refused([](nlohmann::json& c) { c["linear_num_value_heads"] = 3; }, {"linear_num_value_heads", "3"});
}

TEST(HybridConfig, AttentionHeadsThatDoNotDivideAreRefused) {
  refused([](nlohmann::json& c) { c["num_key_value_heads"] = 3; }, {"attention heads", "4 / 3"});
}

TEST(HybridConfig, MissingALogOrDtBiasIsRefusedByName) {
  refused([](nlohmann::json&) {}, {"model.layers.1.linear_attn.A_log", "missing"}, {"model.layers.1.linear_attn.A_log"});
  refused([](nlohmann::json&) {}, {"model.layers.2.linear_attn.dt_bias", "missing"}, {"model.layers.2.linear_attn.dt_bias"});
}

TEST(HybridConfig, AnOutputGateOtherThanSigmoidIsRefused) {
  refused([](nlohmann::json& c) { c["output_gate_type"] = "swish"; }, {"output_gate_type", "swish"});
}

TEST(HybridConfig, PartialRotaryOutOfRangeIsRefused) {
  refused([](nlohmann::json& c) { c["rope_parameters"]["partial_rotary_factor"] = 1.5; }, {"partial_rotary_factor", "1.5"});
}

}  // namespace

// Mixed-precision configurations as the producers write them: ModelOpt MIXED_PRECISION's
// quantized_layers naming fused experts once, compressed-tensors' config groups with overlapping
// targets resolved in its own order (exact name, then regexes sorted, then the class "Linear"),
// `ignore`, Python regexes (\d), and the refusals that name layer, declared format and what we take.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>

#include "io/quant_config.h"
#include "io_test_util.h"
#include "nvfp4/error.h"

using namespace nvfp4;
using Json = nlohmann::json;

namespace {

// The groups of a compressed-tensors config in the order given (written to config.json, whose
// order decides which group a target named twice belongs to).
QuantConfig ct(const test::ScratchDir& d, const std::string& groups_json, const std::string& ignore = "[\"lm_head\"]") {
  const std::string text = R"({"quantization_config": {"quant_method": "compressed-tensors", "format": "mixed-precision",
    "ignore": )" + ignore + R"(, "config_groups": )" + groups_json + "}}";
  std::ofstream(d / "config.json") << text;
  const Json j = Json::parse(text);
  return QuantConfig::parse(&j, nullptr, d.path);
}

const char* kFp8 = R"({"format": "float-quantized", "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}, "targets": %T%})";
const char* kFp4 = R"({"format": "nvfp4-pack-quantized", "weights": {"num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group"},
  "input_activations": {"num_bits": 4, "type": "float", "group_size": 16}, "targets": %T%})";

std::string group(const char* tmpl, const std::string& targets) {
  std::string s = tmpl;
  s.replace(s.find("%T%"), 3, targets);
  return s;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(QuantConfigMixed, CompressedTensorsRegexBeatsTheLinearClassWhateverTheGroupOrder) {
  // Unsloth's form: one group for every Linear, a second whose regex picks the experts.
  const std::string fp8_all = group(kFp8, R"(["Linear"])");
  const std::string fp4_exp = group(kFp4, R"(["re:.*mlp\\.experts\\.\\d+\\.(gate|up|down)_proj$"])");
  for (const bool fp8_first : {true, false}) {
    test::ScratchDir d;
    const QuantConfig c = fp8_first ? ct(d, "{\"a\": " + fp8_all + ", \"b\": " + fp4_exp + "}")
                                    : ct(d, "{\"a\": " + fp4_exp + ", \"b\": " + fp8_all + "}");
    EXPECT_EQ(c.layer("model.layers.0.mlp.experts.0.down_proj"), LayerQuant::nvfp4_w4a4);
    EXPECT_EQ(c.layer("model.layers.3.mlp.experts.17.gate_proj"), LayerQuant::nvfp4_w4a4);
    EXPECT_EQ(c.layer("model.layers.0.self_attn.q_proj"), LayerQuant::fp8);
    EXPECT_EQ(c.layer("model.layers.0.mlp.gate"), LayerQuant::fp8);  // the router is a Linear too
    EXPECT_EQ(c.layer("model.layers.0.mlp.experts.x.down_proj"), LayerQuant::fp8);  // \d+ is digits only
    EXPECT_EQ(c.layer("lm_head"), LayerQuant::none);                                // ignore
    EXPECT_TRUE(c.declares_nvfp4());
  }
}

TEST(QuantConfigMixed, CompressedTensorsOrderExactNameThenSortedRegexes) {
  test::ScratchDir d;
  // Two regexes match the last layer's down_proj: the one sorting first ("re:.*layers\.1\..." <
  // "re:.*mlp...") wins; an exact name beats both.
  const QuantConfig c = ct(d, "{\"g0\": " + group(kFp4, R"(["re:.*mlp\\.(gate|up|down)_proj$"])") +
                                  ", \"g1\": " + group(kFp8, R"(["re:.*layers\\.1\\..*", "model.layers.0.mlp.up_proj"])") + "}");
  EXPECT_EQ(c.layer("model.layers.0.mlp.down_proj"), LayerQuant::nvfp4_w4a4);
  EXPECT_EQ(c.layer("model.layers.0.mlp.up_proj"), LayerQuant::fp8);   // exact name
  EXPECT_EQ(c.layer("model.layers.1.mlp.down_proj"), LayerQuant::fp8); // sorted regex order
  EXPECT_EQ(c.layer("model.layers.0.self_attn.q_proj"), LayerQuant::none);
  // re.match anchors at the start only: a regex naming a prefix matches the longer name.
  test::ScratchDir d2;
  const QuantConfig p = ct(d2, "{\"g\": " + group(kFp8, R"(["re:model\\.layers\\.0\\.self_attn"])") + "}");
  EXPECT_EQ(p.layer("model.layers.0.self_attn.o_proj"), LayerQuant::fp8);
  EXPECT_EQ(p.layer("x.model.layers.0.self_attn.o_proj"), LayerQuant::none);
}

TEST(QuantConfigMixed, CompressedTensorsTargetInTwoGroupsTakesTheLaterGroup) {
  // Group names that sort the other way round from the file's order: the file decides.
  test::ScratchDir d;
  const QuantConfig c = ct(d, "{\"z_first\": " + group(kFp4, R"(["Linear"])") + ", \"a_second\": " + group(kFp8, R"(["Linear"])") + "}");
  EXPECT_EQ(c.layer("model.layers.0.mlp.down_proj"), LayerQuant::fp8);
  test::ScratchDir d2;
  const QuantConfig c2 = ct(d2, "{\"a_first\": " + group(kFp8, R"(["Linear"])") + ", \"z_second\": " + group(kFp4, R"(["Linear"])") + "}");
  EXPECT_EQ(c2.layer("model.layers.0.mlp.down_proj"), LayerQuant::nvfp4_w4a4);
}

TEST(QuantConfigMixed, CompressedTensorsIgnoreByRegexAndExactNameOnly) {
  test::ScratchDir d;
  const QuantConfig c = ct(d, "{\"g\": " + group(kFp4, R"(["Linear"])") + "}", R"(["lm_head", "re:.*mlp\\.gate$", "model.layers.1.*"])");
  EXPECT_EQ(c.layer("lm_head"), LayerQuant::none);
  EXPECT_EQ(c.layer("model.layers.0.mlp.gate"), LayerQuant::none);
  EXPECT_EQ(c.layer("model.layers.0.mlp.gate_proj"), LayerQuant::nvfp4_w4a4);
  EXPECT_EQ(c.layer("model.layers.1.mlp.up_proj"), LayerQuant::nvfp4_w4a4);  // not a regex: no wildcard meaning
}

TEST(QuantConfigMixed, ModeloptQuantizedLayersNameFusedExpertsOnce) {
  const Json h = Json::parse(R"({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "MIXED_PRECISION",
    "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head", "model.layers.*.mlp.gate"],
    "quantized_layers": {"model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
                         "model.layers.0.mlp.experts": {"quant_algo": "W4A16_NVFP4", "group_size": 16},
                         "model.layers.0.mlp.experts.3": {"quant_algo": "FP8_PER_CHANNEL_PER_TOKEN"}}}})");
  const QuantConfig c = QuantConfig::parse(nullptr, &h, "/d");
  EXPECT_EQ(c.layer("model.layers.0.mlp.experts.0.down_proj"), LayerQuant::nvfp4_w4a16);
  EXPECT_EQ(c.layer("model.layers.0.mlp.experts.127.gate_proj"), LayerQuant::nvfp4_w4a16);
  EXPECT_EQ(c.layer("model.layers.0.mlp.experts.3.up_proj"), LayerQuant::fp8);  // the longest entry naming it
  EXPECT_EQ(c.layer("model.layers.0.mlp.experts_shared.up_proj"), LayerQuant::none);  // a prefix, not a parent
  EXPECT_EQ(c.layer("model.layers.0.self_attn.q_proj"), LayerQuant::fp8);
  EXPECT_EQ(c.layer("model.layers.0.self_attn.k_proj"), LayerQuant::none);
  EXPECT_EQ(c.layer("model.layers.0.mlp.gate"), LayerQuant::none);
}

// ModelOpt 0.47's export under transformers 5 writes some names with an unresolved-name marker
// (fixtures/mixed/nemotron_h/*/hf_quant_config.json hold them): without the marker the name is
// the layer's (or the pattern's), in quantized_layers and in exclude_modules alike.
TEST(QuantConfigMixed, ModeloptNamesWithTheUnresolvedNameMarker) {
  const Json h = Json::parse(R"({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "MIXED_PRECISION",
    "exclude_modules": ["lm_head.\u0000backbone.pt_name_sentinel"],
    "quantized_layers": {"backbone.layers.0.mixer.in_proj.\u0000backbone.pt_name_sentinel": {"quant_algo": "FP8"},
                         "backbone.layers.2.mixer.experts.\u0000backbone.pt_name_sentinel": {"quant_algo": "W4A16_NVFP4", "group_size": 16},
                         "backbone.layers.3.mixer.up_proj": {"quant_algo": "W4A16_NVFP4", "group_size": 16}}}})");
  const QuantConfig c = QuantConfig::parse(nullptr, &h, "/d");
  EXPECT_EQ(c.layer("backbone.layers.0.mixer.in_proj"), LayerQuant::fp8);
  EXPECT_EQ(c.layer("backbone.layers.2.mixer.experts.5.down_proj"), LayerQuant::nvfp4_w4a16);
  EXPECT_EQ(c.layer("backbone.layers.3.mixer.up_proj"), LayerQuant::nvfp4_w4a16);
  EXPECT_EQ(c.layer("backbone.layers.0.mixer.out_proj"), LayerQuant::none);
  // NVIDIA's Nemotron 3 Nano recipe as ModelOpt 0.47 writes it: layers 0 and 1 left whole (a
  // pattern whose wildcard follows the marker), the routers by name.
  const Json g = Json::parse(R"({"quantization": {"quant_algo": "NVFP4", "group_size": 16,
    "exclude_modules": ["lm_head.\u0000backbone.pt_name_sentinel", "backbone.layers.*.mixer.gate.\u0000backbone.pt_name_sentinel",
                        "backbone.layers.0.\u0000backbone.pt_name_sentinel*"]}})");
  const QuantConfig n = QuantConfig::parse(nullptr, &g, "/d");
  EXPECT_EQ(n.layer("lm_head"), LayerQuant::none);
  EXPECT_EQ(n.layer("backbone.layers.2.mixer.gate"), LayerQuant::none);
  EXPECT_EQ(n.layer("backbone.layers.0.mixer.in_proj"), LayerQuant::none);
  EXPECT_EQ(n.layer("backbone.layers.10.mixer.in_proj"), LayerQuant::nvfp4_w4a4);  // "layers.0.*" is not "layers.10"
  EXPECT_EQ(n.layer("backbone.layers.2.mixer.up_proj"), LayerQuant::nvfp4_w4a4);
}

TEST(QuantConfigMixed, RefusalsNameLayerFormatAndWhatWeTake) {
  const auto mo = [](const std::string& algo) {
    const Json h = Json::parse(R"({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
      "model.layers.2.self_attn.o_proj": {"quant_algo": ")" + algo + R"("}}}})");
    return refusal([&] { QuantConfig::parse(nullptr, &h, "/d"); });
  };
  for (const char* a : {"W4A8_AWQ", "NO_SUCH"}) {
    const std::string m = mo(a);
    EXPECT_NE(m.find("model.layers.2.self_attn.o_proj"), std::string::npos) << m;
    EXPECT_NE(m.find(a), std::string::npos) << m;
    EXPECT_NE(m.find("W4A16_NVFP4"), std::string::npos) << m;  // what we take
    EXPECT_NE(m.find("MXFP8"), std::string::npos) << m;
  }
  // Read now: MXFP8 (group_size 32), the 128x128 block forms, CSF-encoded scales; what they map to.
  const auto mo_ok = [](const std::string& entry) {
    const Json h = Json::parse(R"({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
      "model.layers.2.self_attn.o_proj": )" + entry + "}}}");
    return QuantConfig::parse(nullptr, &h, "/d").layer("model.layers.2.self_attn.o_proj");
  };
  EXPECT_EQ(mo_ok(R"({"quant_algo": "MXFP8", "group_size": 32})"), LayerQuant::mxfp8);
  EXPECT_EQ(mo_ok(R"({"quant_algo": "FP8_PB_WO"})"), LayerQuant::fp8_block);
  EXPECT_EQ(mo_ok(R"({"quant_algo": "fp8_pb_wo"})"), LayerQuant::fp8_block);
  EXPECT_EQ(mo_ok(R"({"quant_algo": "NVFP4", "group_size": 16, "weight_scale_encoding": "csf"})"), LayerQuant::nvfp4_w4a4);
  {
    const Json h = Json::parse(R"({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
      "model.layers.2.self_attn.o_proj": {"quant_algo": "MXFP8", "group_size": 16}}}})");
    const std::string m = refusal([&] { QuantConfig::parse(nullptr, &h, "/d"); });
    EXPECT_NE(m.find("ModelOpt MXFP8 group size (layer model.layers.2.self_attn.o_proj)"), std::string::npos) << m;
  }
  const Json csf = Json::parse(R"({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
    "model.layers.3.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16, "weight_scale_encoding": "zstd"}}}})");
  const std::string mc = refusal([&] { QuantConfig::parse(nullptr, &csf, "/d"); });
  EXPECT_NE(mc.find("model.layers.3.mlp.experts"), std::string::npos) << mc;
  EXPECT_NE(mc.find("zstd"), std::string::npos) << mc;
  EXPECT_NE(mc.find("csf"), std::string::npos) << mc;  // what we take
  const auto ctw = [](const std::string& weights) {
    test::ScratchDir d;
    return refusal([&] { ct(d, R"({"g": {"weights": )" + weights + R"(, "targets": ["Linear"]}})"); });
  };
  const auto ct_ok = [](const std::string& weights) {
    test::ScratchDir d;
    return ct(d, R"({"g": {"weights": )" + weights + R"(, "targets": ["Linear"]}})").layer("model.layers.0.mlp.up_proj");
  };
  EXPECT_EQ(ct_ok(R"({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]})"), LayerQuant::fp8_block);
  EXPECT_EQ(ct_ok(R"({"num_bits": 8, "type": "float", "strategy": "group", "group_size": 32, "scale_dtype": "torch.uint8"})"),
            LayerQuant::mxfp8);
  std::string m = ctw(R"({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [64, 64]})");
  EXPECT_NE(m.find("block size"), std::string::npos) << m;
  EXPECT_NE(m.find("[64,64]"), std::string::npos) << m;
  m = ctw(R"({"num_bits": 8, "type": "float", "strategy": "group", "group_size": 32})");
  EXPECT_NE(m.find("MXFP8"), std::string::npos) << m;
  EXPECT_NE(m.find("scale_dtype none"), std::string::npos) << m;
  m = ctw(R"({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128})");
  EXPECT_NE(m.find("4-bit int in group g"), std::string::npos) << m;
  test::ScratchDir d;
  m = refusal([&] { ct(d, "{\"g\": " + group(kFp8, R"(["re:(?P<x>.*)_proj"])") + "}"); });
  EXPECT_NE(m.find("(?P<x>.*)_proj"), std::string::npos) << m;
}

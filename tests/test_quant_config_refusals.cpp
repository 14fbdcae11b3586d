// hf_quant_config.json and config.json's quantization_config: a field of the wrong type or a bad
// regular expression is refused naming the file and the field's path in it, what was expected and
// what was found (not a bare JSON library error).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/quant_config.h"
#include "nvfp4/error.h"

namespace nvfp4 {
namespace {

using nlohmann::json;

struct Refusal {
  std::string file, field, rule, expected, found;
};

Refusal refusal(const json* config, const json* hfq) {
  try {
    QuantConfig::parse(config, hfq, "/m");
  } catch (const Error& e) {
    return {e.file(), e.tensor(), e.rule(), e.expected(), e.found()};
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an nvfp4::Error: " << e.what();
    return {};
  }
  ADD_FAILURE() << "accepted";
  return {};
}

TEST(QuantConfigRefusals, ModelOptFieldsOfTheWrongType) {
  struct Case {
    json q;
    std::string field, found;
  } cases[] = {
      {{{"quant_algo", "NVFP4"}, {"group_size", "16"}}, "quantization.group_size", "\"16\""},
      {{{"quant_algo", 5}}, "quantization.quant_algo", "5"},
      {{{"quant_algo", "NVFP4"}, {"group_size", 16.5}}, "quantization.group_size", "16.5"},
      {{{"quant_algo", "NVFP4"}, {"exclude_modules", "lm_head"}}, "quantization.exclude_modules", "\"lm_head\""},
      {{{"quant_algo", "NVFP4"}, {"exclude_modules", {"lm_head", 3}}}, "quantization.exclude_modules", "3"},
      {{{"quant_algo", "NVFP4"}, {"exclude_modules", {"re:model.(layers"}}}, "quantization.exclude_modules",
       "re:model.(layers"},
      {{{"quant_algo", "NVFP4"}, {"group_size", 32}}, "quantization.group_size", "32"},
      {{{"quant_algo", "INT4"}}, "quantization.quant_algo", "INT4"},
      {{{"quant_algo", "MIXED_PRECISION"}, {"quantized_layers", {{"model.layers.0.mlp", 7}}}},
       "quantization.quantized_layers.model.layers.0.mlp", "7"},
      {{{"quant_algo", "MIXED_PRECISION"}, {"quantized_layers", {{"model.layers.0.mlp", {{"quant_algo", false}}}}}},
       "quantization.quantized_layers.model.layers.0.mlp.quant_algo", "false"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.q.dump());
    const json hfq = {{"quantization", c.q}};
    const Refusal r = refusal(nullptr, &hfq);
    EXPECT_EQ(r.file, "/m/hf_quant_config.json");
    EXPECT_EQ(r.field, c.field);
    EXPECT_EQ(r.found, c.found);
    EXPECT_FALSE(r.expected.empty());
  }
}

TEST(QuantConfigRefusals, CompressedTensorsFieldsOfTheWrongType) {
  const json good_group = {{"targets", {"Linear"}},
                           {"weights", {{"num_bits", 4}, {"type", "float"}, {"group_size", 16}}},
                           {"format", "nvfp4-pack-quantized"}};
  auto with = [&](const std::function<void(json&)>& f) {
    json q = {{"quant_method", "compressed-tensors"}, {"format", "nvfp4-pack-quantized"},
              {"config_groups", {{"group_0", good_group}}}};
    f(q);
    return json{{"quantization_config", q}};
  };
  EXPECT_NO_THROW(QuantConfig::parse(&static_cast<const json&>(with([](json&) {})), nullptr, "/m"));
  struct Case {
    std::function<void(json&)> f;
    std::string field;
  } cases[] = {
      {[](json& q) { q["quant_method"] = 1; }, "quantization_config.quant_method"},
      {[](json& q) { q["format"] = json::array(); }, "quantization_config.format"},
      {[](json& q) { q["ignore"] = {"re:lm_head["}; }, "quantization_config.ignore"},
      {[](json& q) { q["config_groups"]["group_0"]["targets"] = {"re:(("}; }, "quantization_config.config_groups.group_0.targets"},
      {[](json& q) { q["config_groups"]["group_0"]["weights"]["num_bits"] = "4"; },
       "quantization_config.config_groups.group_0.weights.num_bits"},
      {[](json& q) { q["config_groups"]["group_0"]["weights"]["group_size"] = "16"; },
       "quantization_config.config_groups.group_0.weights.group_size"},
      {[](json& q) { q["config_groups"]["group_0"]["weights"]["type"] = 4; },
       "quantization_config.config_groups.group_0.weights.type"},
      {[](json& q) { q["config_groups"]["group_0"]["input_activations"] = "fp4"; },
       "quantization_config.config_groups.group_0.input_activations"},
      {[](json& q) { q["config_groups"]["group_0"] = 3; }, "quantization_config.config_groups.group_0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    const json cfg = with(c.f);
    const Refusal r = refusal(&cfg, nullptr);
    EXPECT_EQ(r.file, "/m/config.json");
    EXPECT_EQ(r.field, c.field);
    EXPECT_FALSE(r.found.empty());
  }
}

}  // namespace
}  // namespace nvfp4

// config.json as Python's json writes it (bare Infinity, -Infinity, NaN: io/json_config.h), read
// in config.json only; HTTP request bodies keep refusing the bare words.
#include <gtest/gtest.h>

#include <cmath>

#include "io/json_config.h"
#include "nvfp4/error.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/request.h"

namespace nvfp4 {
namespace {

TEST(JsonConfig, BareWordsOutsideStringsAreFloats) {
  const auto j = parse_config_json(R"({"time_step_limit": [0.0, Infinity], "lo": -Infinity, "n":NaN,
    "s": "Infinity NaN -Infinity", "e": "\"NaN\"", "a": [NaN,Infinity,-Infinity]})", "config.json");
  ASSERT_TRUE(j["time_step_limit"][1].is_number_float());
  EXPECT_TRUE(std::isinf(j["time_step_limit"][1].get<double>()));
  EXPECT_GT(j["time_step_limit"][1].get<double>(), 0);
  EXPECT_EQ(j["time_step_limit"][0].get<double>(), 0.0);
  EXPECT_TRUE(std::isinf(j["lo"].get<double>()) && j["lo"].get<double>() < 0);
  EXPECT_TRUE(std::isnan(j["n"].get<double>()));
  EXPECT_EQ(j["s"], "Infinity NaN -Infinity");  // inside strings: as they are
  EXPECT_EQ(j["e"], "\"NaN\"");
  EXPECT_TRUE(std::isnan(j["a"][0].get<double>()));
  EXPECT_TRUE(std::isinf(j["a"][1].get<double>()) && std::isinf(j["a"][2].get<double>()));
  // transformers 5's spelling.
  const auto t = parse_config_json(R"({"time_step_limit": [0.0, {"__float__": "Infinity"}], "o": {"__float__": "x"}})", "c");
  EXPECT_TRUE(std::isinf(t["time_step_limit"][1].get<double>()));
  EXPECT_TRUE(t["o"].is_object());  // another value: left as it is
  // Plain JSON is read as json::parse reads it.
  EXPECT_EQ(parse_config_json(R"({"a": [1, 2.5, "x"]})", "c"), nlohmann::json::parse(R"({"a": [1, 2.5, "x"]})"));
}

// Written back as json.dumps writes it (the ModelOpt directory convert writes), and read again.
TEST(JsonConfig, NonFiniteNumbersAreWrittenAsBareWords) {
  const std::string in = R"({"time_step_limit": [0.0, Infinity], "lo": -Infinity, "n": NaN, "s": "Infinity", "k": 2.5})";
  const auto j = parse_config_json(in, "config.json");
  const std::string out = dump_config_json(j, 2);
  EXPECT_NE(out.find("Infinity\n  ]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"lo\": -Infinity"), std::string::npos) << out;
  EXPECT_NE(out.find("\"n\": NaN"), std::string::npos) << out;
  EXPECT_NE(out.find("\"s\": \"Infinity\""), std::string::npos) << out;  // a string stays a string
  EXPECT_EQ(out.find("null"), std::string::npos) << out;
  const auto back = parse_config_json(out, "config.json");
  EXPECT_TRUE(std::isinf(back["time_step_limit"][1].get<double>()));
  EXPECT_TRUE(std::isinf(back["lo"].get<double>()) && back["lo"].get<double>() < 0);
  EXPECT_TRUE(std::isnan(back["n"].get<double>()));
  EXPECT_EQ(back["s"], "Infinity");
  EXPECT_EQ(back["k"], 2.5);
  // Finite JSON: what dump writes.
  EXPECT_EQ(dump_config_json(nlohmann::json::parse(R"({"a": [1, 2.5, "x"]})"), 2), nlohmann::json::parse(R"({"a": [1, 2.5, "x"]})").dump(2));
}

TEST(JsonConfig, OtherBareWordsAndMarkersAreRefused) {
  for (const char* bad : {"[Infinit]", "[InfinityX]", "[NaNa]", "[+Infinity]", "[infinity]", "[nan]", "{\"a\": 1,}"})
    EXPECT_THROW(parse_config_json(bad, "config.json"), nlohmann::json::exception) << bad;
  // Strings with U+0000 are read as they are (ModelOpt writes "lm_head.\u0000backbone...").
  EXPECT_EQ(parse_config_json(R"({"a": "x\u0000y", "b": "\u0000Infinity", "c": Infinity})", "c")["b"], std::string("\0Infinity", 9));
  try {
    parse_config_json(R"({"a": "\u0000nvfp4:Infinity", "b": NaN})", "dir/config.json");
    ADD_FAILURE() << "accepted a marker";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "dir/config.json");
    EXPECT_NE(std::string(e.what()).find("marker"), std::string::npos) << e.what();
  }
}

TEST(JsonConfig, RequestBodiesStillRefuseBareWords) {
  const std::string bodies[] = {R"({"prompt": "hi", "temperature": Infinity})", R"({"prompt": "hi", "top_p": NaN})",
                                R"({"prompt": "hi", "max_tokens": -Infinity})"};
  for (const std::string& b : bodies) {
    for (const bool chat : {false, true}) {
      const std::string body = chat ? std::string(R"({"messages": [{"role": "user", "content": "hi"}], "temperature": Infinity})") : b;
      try {
        server::parse_gen_request(body, chat);
        ADD_FAILURE() << "accepted " << body;
      } catch (const server::ApiError& e) {
        EXPECT_EQ(e.status, 400) << body;
        EXPECT_EQ(e.code, "invalid_json") << body;
      }
    }
    EXPECT_THROW(server::parse_body_object(b), server::ApiError) << b;
  }
}

}  // namespace
}  // namespace nvfp4

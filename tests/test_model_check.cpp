// Model::check (what `inspect` runs) refuses exactly what Model::load refuses, with the same words:
// over every checkpoint under fixtures/ (each family, producer and container), and over copies of
// one whose config.json was made to contradict its tensors (a tensor missing, one left unread, one
// misshapen). Then `inspect` through the binary: exit 1 naming the refusal, 0 with --no-check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/model.h"
#include "test_util.h"

using namespace nvfp4;
using namespace nvfp4::test;
namespace fs = std::filesystem;

namespace {

// Every checkpoint fixture: the HF directories (a config.json beside .safetensors) and the .gguf files.
std::vector<std::string> checkpoint_fixtures() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(fixture_path(""))) {
    if (e.path().extension() == ".gguf") out.push_back(e.path().string());
    if (e.path().filename() == "config.json") {
      bool st = false;
      for (const auto& f : fs::directory_iterator(e.path().parent_path())) st = st || f.path().extension() == ".safetensors";
      if (st) out.push_back(e.path().parent_path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "" when `f` passes, else its Error's text.
template <typename F>
std::string refusal(F f) {
  try {
    f();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// load's verdict (in the mode `run` picks: a16q8 with NVFP4 weights, f32 without) against check's.
void expect_same_verdict(const Checkpoint& ck, const std::string& what, int& refused) {
  bool nv = false;
  for (const auto& t : ck.tensors()) nv = nv || t.storage == Storage::nvfp4;
  LoadOptions lo;
  lo.mode = nv ? Mode::a16q8 : Mode::f32;
  const std::string by_load = refusal([&] { Model::load(ck, lo); });
  const std::string by_check = refusal([&] { Model::check(ck, lo); });
  EXPECT_EQ(by_check, by_load) << what;
  refused += !by_load.empty();
  if (!by_load.empty()) std::printf("  refused: %s\n", by_load.c_str());
}

TEST(ModelCheck, RefusesWhatLoadRefusesOnEveryFixture) {
  int opened = 0, refused = 0;
  for (const std::string& p : checkpoint_fixtures()) {
    std::unique_ptr<Checkpoint> ck;
    try {
      ck = Checkpoint::open(p);
    } catch (const Error&) {
      continue;  // the damaged files of the reader's own tests: refused before any model
    }
    ++opened;
    expect_same_verdict(*ck, p, refused);
  }
  std::printf("%d checkpoints opened, %d of them refused by load (and by check)\n", opened, refused);
  EXPECT_GE(opened, 60);
}

class ModelCheckDamaged : public ::testing::Test {
 protected:
  fs::path tmp_ = fs::temp_directory_path() / ("nvfp4_model_check_" + std::to_string(::getpid()));
  void SetUp() override { fs::remove_all(tmp_); }
  void TearDown() override { fs::remove_all(tmp_); }
  // A copy of `src` whose config.json has `key` set to `value` (null: removed).
  std::string damaged(const std::string& src, const std::string& key, const nlohmann::json& value) {
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
    for (const auto& e : fs::directory_iterator(src)) fs::copy(e.path(), tmp_ / e.path().filename());
    std::ifstream in(tmp_ / "config.json");
    nlohmann::json cfg = nlohmann::json::parse(in);
    in.close();
    if (value.is_null()) cfg.erase(key);
    else cfg[key] = value;
    std::ofstream(tmp_ / "config.json") << cfg.dump(1);
    return tmp_.string();
  }
};

TEST_F(ModelCheckDamaged, ConfigContradictingTheTensorsIsRefusedAlike) {
  const std::string src = fixture_path("arch/qwen3/modelopt-nvfp4");
  const nlohmann::json cfg = nlohmann::json::parse(std::ifstream(src + "/config.json"));
  const int64_t layers = cfg["num_hidden_layers"].get<int64_t>(), ff = cfg["intermediate_size"].get<int64_t>();
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* says;  // and, named as the directory names it:
    const char* names;
  };
  for (const Case& c : {Case{"num_hidden_layers", layers + 1, "missing tensor", "model.layers.2.input_layernorm.weight"},
                        Case{"num_hidden_layers", layers - 1, "does not use", "model.layers.1.mlp.down_proj.weight"},
                        Case{"intermediate_size", ff + 16, "tensor shape", "model.layers.0.mlp.gate_proj.weight"},
                        Case{"hidden_size", nullptr, "missing config.json key 'hidden_size'", "config.json"}}) {
    SCOPED_TRACE(std::string(c.key) + " " + c.value.dump());
    auto ck = Checkpoint::open(damaged(src, c.key, c.value));
    int refused = 0;
    expect_same_verdict(*ck, c.key, refused);
    EXPECT_EQ(refused, 1);
    const std::string why = refusal([&] { Model::check(*ck, LoadOptions{}); });
    EXPECT_NE(why.find(c.says), std::string::npos) << why;
    EXPECT_NE(why.find(c.names), std::string::npos) << why;
    EXPECT_EQ(why.find("blk."), std::string::npos) << why;  // not the canonical GGUF names
    EXPECT_EQ(why.find("qwen3."), std::string::npos) << why;
    // inspect: the listing, then exit 1 with the refusal; --no-check: exit 0.
    const Result r = cli("inspect " + tmp_.string(), true);
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("run refuses it"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << r.out;
    const Result j = cli("inspect " + tmp_.string() + " --json");
    EXPECT_EQ(j.rc, 1);
    EXPECT_EQ(cli("inspect " + tmp_.string() + " --no-check").rc, 0);
  }
  const Result ok = cli("inspect " + src + " --json");
  ASSERT_EQ(ok.rc, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"ok\": true"), std::string::npos) << ok.out;
}

}  // namespace

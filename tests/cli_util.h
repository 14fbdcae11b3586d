// Running the real binaries from a test: a shell command's exit status and output, the nvfp4
// binary with arguments, and its JSON output.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model_path.h"

namespace nvfp4::test {

struct Result {
  int rc;  // the exit status; 128 + the signal when a signal ended it
  std::string out;
};

// `cmd` through the shell: its stdout (and whatever the command redirects there) and its status.
inline Result sh(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0), out};
}

// The nvfp4 binary with `args`: stdout only (JSON), or stdout and stderr together.
inline Result cli(const std::string& args, bool keep_stderr = false) {
  return sh(std::string(NVFP4_BINARY) + " " + args + (keep_stderr ? " 2>&1" : " 2>/dev/null"));
}

// The output as JSON; null when it is not.
inline nlohmann::json json_of(const Result& r) {
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

// `run --json`'s generated ids; empty when the output has none.
inline std::vector<int32_t> ids_of(const Result& r) {
  const nlohmann::json j = json_of(r);
  return j.contains("ids") ? j["ids"].get<std::vector<int32_t>>() : std::vector<int32_t>{};
}

}  // namespace nvfp4::test

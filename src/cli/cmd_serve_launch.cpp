// nvfp4 serve, as the `nvfp4` executable runs it: replaces itself (execv, the same process id) by
// `nvfp4-server serve ARGS...`, the executable beside it that holds the server (cmd_serve.cpp).
// The server is a separate executable, as llama.cpp's llama-server is, because the HTTP library
// (Debian's cpp-httplib) is a shared library built with OpenSSL, zlib and brotli: linked into
// `nvfp4`, every command loaded them and about 4 MB of their pages stayed resident beside the
// model (3.2 MB for libcrypto alone, measured with /proc/PID/smaps on `bench model`).
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/registry.h"
#include "nvfp4/error.h"

namespace nvfp4::cli {
namespace {

std::string server_path() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw Error("/proc/self/exe", "", "cannot find this executable's folder", "a readable link", std::strerror(errno));
  self[n] = '\0';
  return (std::filesystem::path(self).parent_path() / "nvfp4-server").string();
}

const Registrar reg("serve", "OpenAI-compatible HTTP server with continuous batching (runs nvfp4-server)", [](CLI::App& app) {
  // Every argument, --help included, goes to nvfp4-server as it is.
  app.prefix_command();
  app.set_help_flag();
  return [&app]() -> int {
    const std::string bin = server_path();
    std::vector<std::string> args = {"nvfp4", "serve"};  // argv[0]: what usage lines and ps show
    for (const std::string& s : app.remaining()) args.push_back(s);
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    throw Error(bin, "", "cannot run the server executable (built beside nvfp4 by the same build)", "an executable file",
                std::strerror(errno));
  };
});

}  // namespace
}  // namespace nvfp4::cli

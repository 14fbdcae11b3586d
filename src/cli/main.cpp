// The `nvfp4` command. Exit codes: 0 success, 1 refused or failed (message on stderr),
// 2 usage error.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string_view>
#include <vector>

#include "cli/registry.h"
#include "nvfp4/error.h"

namespace nvfp4::cli {
std::vector<CommandSpec>& commands() {
  static std::vector<CommandSpec> list;
  return list;
}
}  // namespace nvfp4::cli

int main(int argc, char** argv) {
  using namespace nvfp4::cli;
  CLI::App app{"nvfp4: run NVFP4 language models on x86 CPUs (AVX2, AVX-512) without FP4 tensor cores"};
  app.set_version_flag("--version", std::string("nvfp4 ") + NVFP4_VERSION);
  app.require_subcommand(0, 1);

  auto& cmds = commands();
  std::sort(cmds.begin(), cmds.end(),
            [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (auto& c : cmds) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    runners.emplace_back(sub, c.setup(*sub));
  }

  // llama.cpp spells its draft model -md; CLI11 2.1's short names are one letter, so -md is
  // taken as its long name here.
  char model_draft[] = "--model-draft";
  std::vector<char*> args(argv, argv + argc);
  for (char*& s : args)
    if (std::string_view(s) == "-md") s = model_draft;
#ifdef NVFP4_ONE_COMMAND
  // An executable of one command (nvfp4-server): `nvfp4-server ARGS` is `nvfp4-server serve ARGS`.
  char one[] = NVFP4_ONE_COMMAND;
  if (args.size() < 2 || (std::string_view(args[1]) != one && std::string_view(args[1]) != "--version"))
    args.insert(args.begin() + 1, one);
#endif
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    try {
      return run();
    } catch (const nvfp4::Error& e) {
      std::cerr << "nvfp4 " << sub->get_name() << ": error: " << e.what() << "\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "nvfp4 " << sub->get_name() << ": error: " << e.what() << "\n";
      return 1;
    }
  }
  std::cout << app.help();
  return 0;
}

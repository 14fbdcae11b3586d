// `nvfp4 bench`: a command whose subcommands come from bench_commands() (bench_registry.h).
#include <algorithm>
#include <iostream>

#include "cli/bench_registry.h"

namespace nvfp4::cli {

std::vector<CommandSpec>& bench_commands() {
  static std::vector<CommandSpec> list;
  return list;
}

namespace {

const Registrar reg("bench", "measure kernels (and more) on this machine", [](CLI::App& app) {
  auto& specs = bench_commands();
  std::sort(specs.begin(), specs.end(), [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
  auto runners = std::make_shared<std::vector<std::pair<CLI::App*, std::function<int()>>>>();
  for (auto& s : specs) {
    CLI::App* sub = app.add_subcommand(s.name, s.description);
    runners->emplace_back(sub, s.setup(*sub));
  }
  app.require_subcommand(1, 1);
  return std::function<int()>([runners]() -> int {
    for (auto& [sub, run] : *runners) {
      if (sub->parsed()) return run();
    }
    return 2;
  });
});

}  // namespace
}  // namespace nvfp4::cli

// Subcommands register themselves here: one file per subcommand under src/cli/, each with a
// static `Registrar`. The CLI sources are linked into the executable directly, so every
// registrar runs before main().
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace nvfp4::cli {

// Sets up the subcommand's options on `sub` and returns the function that runs it. The function
// returns the process exit code; nvfp4::Error thrown from it exits 1 with the message on stderr.
using Setup = std::function<std::function<int()>(CLI::App& sub)>;

struct CommandSpec {
  std::string name;
  std::string description;
  Setup setup;
};

std::vector<CommandSpec>& commands();

struct Registrar {
  Registrar(std::string name, std::string description, Setup setup) {
    commands().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace nvfp4::cli

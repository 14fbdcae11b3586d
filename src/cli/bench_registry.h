// `nvfp4 bench <what>`: each benchmark is one file under src/cli/ with a static BenchRegistrar
// (the same Setup contract as registry.h), so `bench model` can be added beside `bench kernels`.
#pragma once
#include <string>
#include <vector>

#include "cli/registry.h"

namespace nvfp4::cli {

std::vector<CommandSpec>& bench_commands();

struct BenchRegistrar {
  BenchRegistrar(std::string name, std::string description, Setup setup) {
    bench_commands().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace nvfp4::cli

// nvfp4 verify A B: exit 0 when both hold the same NVFP4 weights, 1 with the first difference.
#include <iostream>

#include "cli/registry.h"
#include "nvfp4/verify.h"

namespace nvfp4::cli {
namespace {

Registrar reg("verify",
              "Prove two checkpoints hold the same NVFP4 weights (codes, scale bytes, tensor scales) "
              "across layouts and containers, and A's FP8 layers as stored (or list those B holds in another form), "
              "or print the first difference",
              [](CLI::App& sub) {
                auto a = std::make_shared<std::string>();
                auto b = std::make_shared<std::string>();
                sub.add_option("A", *a, "first checkpoint")->required()->check(CLI::ExistingPath);
                sub.add_option("B", *b, "second checkpoint")->required()->check(CLI::ExistingPath);
                return [a, b]() {
                  const VerifyResult r = verify_checkpoints(*a, *b);
                  if (!r.same) {
                    std::cerr << "nvfp4 verify: differ: " << r.difference << "\n";
                    return 1;
                  }
                  std::cout << "same NVFP4 weights: " << r.tensors << " tensors, " << r.values
                            << " values (codes, block scales, tensor and input scales bit for bit)\n";
                  if (r.fp8_same > 0)
                    std::cout << "same FP8 layers: " << r.fp8_same << " (weights, scales and input scales as stored, byte for byte: lossless)\n";
                  if (!r.fp8_changed.empty()) {
                    std::cout << "FP8 layers B holds in another form (not lossless): " << r.fp8_changed.size() << "\n";
                    for (const auto& c : r.fp8_changed) std::cout << "  " << c << "\n";
                  }
                  return 0;
                };
              });

}  // namespace
}  // namespace nvfp4::cli

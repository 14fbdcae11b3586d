// nvfp4 convert IN OUT.gguf|OUT_DIR [--keep PATTERN]... [--quantize PATTERN]... [--keep-type f16|f32|bf16]
//                          [--verify] [--threads N] [--quantize-method rtn|search] [--calibrate FILE]
//                          [--ctx N] [--calibrate-model float|rtn] [--scale2 fused|per-tensor] [--search-radius R]
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/registry.h"
#include "nvfp4/convert.h"

namespace nvfp4::cli {
namespace {

struct ConvertArgs {
  std::string in, out;
  ConvertOptions opt;
};

Registrar reg(
    "convert",
    "Convert a checkpoint to NVFP4: OUT.gguf (ggml NVFP4 blocks + .scale tensors, file type 39) or OUT "
    "directory (ModelOpt layout); NVFP4 input is repacked losslessly, float/FP8/ggml-quantized weights "
    "are quantized (SPEC section 4)",
    [](CLI::App& sub) {
      auto a = std::make_shared<ConvertArgs>();
      sub.add_option("IN", a->in, "input checkpoint (.gguf, .safetensors or HF directory)")->required()->check(CLI::ExistingPath);
      sub.add_option("OUT", a->out, "output: a .gguf file, or a new directory (ModelOpt layout)")->required();
      sub.add_option("--keep", a->opt.keep, "glob of tensors to keep unquantized (repeatable)");
      sub.add_option("--quantize", a->opt.quantize, "glob of 2-D tensors to quantize although the default keeps them");
      sub.add_option("--keep-type", a->opt.keep_type, "type of kept ggml-quantized matrices (embedding)")
          ->check(CLI::IsMember({"f16", "f32", "bf16"}));
      sub.add_flag("--verify", a->opt.verify, "re-read the output and compare it bit for bit before it is renamed into place");
      sub.add_option("--threads", a->opt.threads, "quantizer threads (default: all cores)")->check(CLI::NonNegativeNumber);
      sub.add_option("--quantize-method", a->opt.method, "rtn: ModelOpt's rounding (default); search: per-block scale search")
          ->check(CLI::IsMember({"rtn", "search"}));
      sub.add_option("--calibrate", a->opt.calibrate, "search: text whose activations (float model) weight the error")
          ->check(CLI::ExistingFile);
      sub.add_option("--ctx", a->opt.calib_ctx, "calibration window in tokens (default 512)")->check(CLI::PositiveNumber);
      sub.add_option("--calibrate-model", a->opt.calib_model, "search: activations of the float model (f32; default) or of the rtn NVFP4 model (a16q8, bit-pinned on every ISA)")
          ->check(CLI::IsMember({"float", "rtn"}));
      sub.add_option("--scale2", a->opt.scale2, "tensor scale: fused (q/k/v and gate/up share one, as ModelOpt's export; default) or per-tensor")
          ->check(CLI::IsMember({"fused", "per-tensor"}));
      sub.add_option("--search-radius", a->opt.search_radius, "search: scale bytes rtn-R..rtn+R (default 4)")->check(CLI::Range(0, 32));
      return [a]() {
        a->opt.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
        if (::isatty(2)) {
          a->opt.progress = [](size_t i, size_t n, const std::string& name) {
            std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, n, name.c_str());
            if (i + 1 == n) std::fprintf(stderr, "\n");
            std::fflush(stderr);
          };
        }
        const ConvertReport r = convert(a->in, a->out, a->opt);
        for (const auto& n : r.notes) std::cerr << "note: " << n << "\n";
        std::cout << a->out << ": " << r.quantized << " quantized to NVFP4, " << r.repacked
                  << " NVFP4 repacked, " << r.kept << " copied, " << r.retyped << " converted to "
                  << a->opt.keep_type << (r.verified ? "; verified bit for bit" : "") << "\n";
        return 0;
      };
    });

}  // namespace
}  // namespace nvfp4::cli

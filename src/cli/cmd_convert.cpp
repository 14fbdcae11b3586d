// nvfp4 convert IN OUT.gguf|OUT_DIR [--keep PATTERN]... [--quantize PATTERN]... [--keep-type f16|f32|bf16]
//                          [--head f16|q8|nvfp4]
//                          [--verify] [--threads N] [--tokenizer FILE.gguf] [--progress]
//                          [--quantize-method rtn|search|awq] [--calibrate FILE] [--ctx N]
//                          [--calibrate-model float|rtn] [--scale2 fused|per-tensor] [--search-radius R]
//                          [--awq-rounding rtn|search]
// Progress goes to stderr (a line at most every second) when stderr is a terminal or with
// --progress. SIGINT/SIGTERM/SIGHUP remove the temporary output and exit 130/143/129; leftovers of a killed
// convert into the same place are removed (and named) when the next one starts.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/registry.h"
#include "nvfp4/convert.h"
#include "nvfp4/temp_cleanup.h"

namespace nvfp4::cli {
namespace {

struct ConvertArgs {
  std::string in, out;
  ConvertOptions opt;
  bool progress = false;
};

// "[12/272] 41.2/270.6 MiB blk.3.ffn_up.weight": on a terminal rewritten in place, else one line each.
void print_progress(const ConvertProgress& p, bool tty) {
  const double mib = 1024.0 * 1024.0;
  std::fprintf(stderr, "%s[%zu/%zu] %.1f/%.1f MiB %s%s", tty ? "\r\033[K" : "", p.index, p.total, p.bytes / mib,
               p.bytes_total / mib, p.name.c_str(), tty && !p.name.empty() ? "" : "\n");
  std::fflush(stderr);
}

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
      sub.add_option("--head", a->opt.head, "output head and embedding: auto (default: q8 for a GGUF output, f16 where the "
                     "rows are not whole 32-blocks or for a directory), f16 (float kept, ggml-quantized to --keep-type), "
                     "q8 (GGML Q8_0; integer-exact in a16q8/w4a4) or nvfp4 (quantized like the linear layers); q8 and nvfp4: GGUF output")
          ->check(CLI::IsMember({"auto", "f16", "q8", "nvfp4"}));
      sub.add_flag("--verify", a->opt.verify, "re-read the output and compare it bit for bit before it is renamed into place");
      sub.add_option("--threads", a->opt.threads, "quantizer threads (default: all cores)")->check(CLI::NonNegativeNumber);
      sub.add_option("--quantize-method", a->opt.method,
                     "rtn: ModelOpt's rounding (default); search: per-block scale search; awq: per-input-channel scales "
                     "searched on --calibrate (ModelOpt's NVFP4_AWQ form; GGUF: only the norm-folded ones)")
          ->check(CLI::IsMember({"rtn", "search", "awq"}));
      sub.add_option("--calibrate", a->opt.calibrate, "search / awq: text whose activations weight the error")
          ->check(CLI::ExistingFile);
      sub.add_option("--ctx", a->opt.calib_ctx, "calibration window in tokens (default 512)")->check(CLI::PositiveNumber);
      sub.add_option("--calibrate-model", a->opt.calib_model, "search: activations of the float model (f32; default) or of the rtn NVFP4 model (a16q8, bit-pinned on every ISA)")
          ->check(CLI::IsMember({"float", "rtn"}));
      sub.add_option("--scale2", a->opt.scale2, "tensor scale: fused (q/k/v and gate/up share one, as ModelOpt's export; default) or per-tensor")
          ->check(CLI::IsMember({"fused", "per-tensor"}));
      sub.add_option("--awq-rounding", a->opt.awq_rounding, "awq: rounding of the scaled weights, rtn (ModelOpt's; default) or search (per-block scale search)")
          ->check(CLI::IsMember({"rtn", "search"}));
            sub.add_option("--search-radius", a->opt.search_radius, "search: scale bytes rtn-R..rtn+R (default 4)")->check(CLI::Range(0, 32));
      sub.add_option("--tokenizer", a->opt.tokenizer, "HF input, GGUF output: take the tokenizer from this GGUF")
          ->check(CLI::ExistingFile);
      sub.add_flag("--progress", a->progress, "print progress on stderr even when it is not a terminal");
      return [a]() {
        remove_temporaries_on_signal();
        for (const auto& s : remove_stale_temporaries(a->out)) {
          std::cerr << (s.removed ? "removed a leftover of an interrupted convert: " : "left alone (in use by another process): ")
                    << s.path << "\n";
        }
        a->opt.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };  // calibration
        const bool tty = ::isatty(2);
        if (tty || a->progress) {
          using clk = std::chrono::steady_clock;
          a->opt.progress = [tty, last = clk::time_point{}](const ConvertProgress& p) mutable {
            const auto now = clk::now();
            if (!p.name.empty() && p.index > 0 && now - last < std::chrono::seconds(1)) return;
            last = now;
            print_progress(p, tty);
          };
        }
        const ConvertReport r = convert(a->in, a->out, a->opt);
        for (const auto& n : r.notes) std::cerr << "note: " << n << "\n";
        std::cout << a->out << ": " << r.quantized << " quantized to NVFP4, " << r.repacked
                  << " NVFP4 repacked, " << r.kept << " copied, " << r.retyped << " converted to "
                  << a->opt.keep_type << (r.fp8_to_q8 > 0 ? ", " + std::to_string(r.fp8_to_q8) + " FP8 to Q8_0" : "")
                  << (r.fp8_kept > 0 ? ", " + std::to_string(r.fp8_kept) + " FP8 kept as stored (lossless)" : "")
                  << (r.verified ? "; verified bit for bit" : "") << "\n";
        return 0;
      };
    });

}  // namespace
}  // namespace nvfp4::cli

// `nvfp4 convert`: a checkpoint in, NVFP4 out. OUT ending in .gguf: ggml NVFP4 blocks (type 40)
// with `<base>.scale` / `<base>.input_scale` F32 companions, general.file_type = 39 and every input
// metadata key carried over; safetensors (HF) input: general.architecture, the hyperparameters and
// the tokenizer under llama.cpp's keys, rope_freqs.weight for Llama 3 RoPE scaling (see
// convert/gguf_meta_from_checkpoint.h).
// Any other OUT is a directory in ModelOpt's export layout (model.safetensors, config.json,
// hf_quant_config.json; HF names, q/k rows in HF order). NVFP4 input is repacked losslessly; float,
// FP8 and ggml-quantized input is quantized by SPEC.md section 4. Written under a temporary name,
// fsynced, (verified,) renamed: on any error OUT does not appear.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nvfp4 {

struct ConvertProgress {
  size_t index = 0, total = 0;      // tensors done, tensors in all
  uint64_t bytes = 0, bytes_total = 0;  // output tensor bytes done, in all
  std::string name;                 // the tensor about to be produced (empty at the end)
};

struct ConvertOptions {
  std::vector<std::string> keep;      // glob patterns (fnmatch) of tensors never quantized
  std::vector<std::string> quantize;  // glob patterns of tensors quantized although the default keeps them
  std::string keep_type = "f16";      // kept 2-D ggml-quantized tensors become f16, f32 or bf16
  // The head and the embedding (output.weight, token_embd.weight):
  //   auto (default): q8 for a GGUF output where n_in % 32 == 0 and --keep does not name it, else f16;
  //   f16: float kept as stored, ggml-quantized to keep_type;
  //   q8: GGML Q8_0 (include/nvfp4/q8_0.h; Q8_0 input copied as is; GGUF output only);
  //   nvfp4: quantized like the other linear layers (GGUF output only).
  // (q8 is the default by issue 13's rule: same-top within 0.5 points of a float head at 53% of
  // F16's bytes, on the bundled head and on one jittered off the Q8_0 grid; docs/BENCHMARKS.md 9.)
  std::string head = "auto";
  bool verify = false;                // re-read the output and compare it bit for bit
  int threads = 0;                    // quantizer threads; 0 = hardware concurrency
  // How float weights become NVFP4 (src/convert/weight_quantizer.h):
  std::string method = "rtn";         // rtn (ModelOpt's rounding) | search (per-block scale search) |
                                      // awq (per-input-channel scales, convert/awq_search.h; needs calibrate)
  std::string scale2 = "fused";       // fused: q/k/v and gate/up share one tensor scale, the larger
                                      // amax of the group (ModelOpt's export) | per-tensor
  std::string calibrate;              // search: text whose activations weight the error (else unweighted)
  int64_t calib_ctx = 512;            // calibration window, tokens
  std::string calib_model = "float";  // float: the float model in f32 | rtn: the rtn NVFP4 model in
                                      // a16q8 (bit-pinned on every ISA; see calibrate.h)
  int search_radius = 4;              // search: scale bytes rtn - r .. rtn + r
  std::string awq_rounding = "rtn";   // awq: rtn (ModelOpt's rounding of W * s) | search (the per-block
                                      // search, weighted by mean (x_i / s_i)^2)
  std::function<void(const std::string&)> log;  // progress lines (calibration, search)
  // HF input to GGUF output: take the tokenizer from this GGUF file (empty: the input's own).
  std::string tokenizer;
  // Called before each output tensor is produced and once after the last (index == total).
  std::function<void(const ConvertProgress&)> progress;
};


struct ConvertReport {
  int quantized = 0;   // float / ggml-quantized -> NVFP4
  int repacked = 0;    // NVFP4 in -> NVFP4 out (lossless)
  int kept = 0;        // copied as they are
  int retyped = 0;     // kept, but ggml-quantized -> keep_type
  int fp8_to_q8 = 0;   // FP8 layers -> Q8_0 (GGUF output: it has no FP8 type)
  int fp8_kept = 0;    // FP8 layers (any scale form) -> a directory, their tensors byte for byte
  bool verified = false;
  std::vector<std::string> notes;  // tensors the default kept for a reason worth telling
};

// The default rule: a 2-D tensor named `*.weight` that is not an embedding (token_embd), a norm,
// a router (ffn_gate_inp), Gated DeltaNet's b / a projections (ssm_beta, ssm_alpha, ssm_ba) or
// the output head.
bool default_quantizes(const std::string& name, size_t n_dims);

// Converts IN (any checkpoint Checkpoint::open accepts) to OUT (.gguf, or a new or empty directory;
// .safetensors alone is refused: the quantization config needs a directory). Throws nvfp4::Error.
ConvertReport convert(const std::string& in, const std::string& out, const ConvertOptions& opt);

}  // namespace nvfp4

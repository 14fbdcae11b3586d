// How `nvfp4 convert` quantizes a float weight: the tensor scale (per tensor, or shared by the
// fused groups q/k/v and gate/up as ModelOpt's export_hf_checkpoint writes it) and the method
// (rtn: ModelOpt's rounding; search: the per-block scale search of quantize.h, weighted by the
// calibration text's activation second moments when --calibrate is given). Rows are split over
// threads; every row is independent once the tensor scale is fixed, so the bytes do not depend on
// the thread count.
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "nvfp4/calibrate.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/convert.h"
#include "nvfp4/matrix.h"

namespace nvfp4 {

// "blk.3.attn_qkv" for blk.3.attn_{q,k,v}.weight, "blk.3.ffn_gate_up" for blk.3.ffn_{gate,up}.weight
// (and ffn_{gate,up}_exps: "blk.3.ffn_gate_up_exps"); "" for a tensor outside any fused group.
std::string fused_group(const std::string& name);

class WeightQuantizer {
 public:
  // Validates the options and, for search with opt.calibrate, runs the calibration (the float
  // model over the text, opt.calib_ctx tokens a window). Throws nvfp4::Error.
  WeightQuantizer(const Checkpoint& ck, const ConvertOptions& opt);

  // Quantizes float tensor `name` (w: its to_f32 values, [n_out][n_in]).
  RowMatrix quantize(const std::string& name, const std::vector<float>& w, int64_t n_out, int64_t n_in) const;
  // The tensor scale `name` gets: its own, or its fused group's (the members' largest).
  float scale2(const std::string& name, const std::vector<float>& w) const;

 private:
  const Checkpoint& ck_;
  ConvertOptions opt_;
  int threads_;
  ChannelMoments moments_;
  mutable std::mutex mu_;
  mutable std::map<std::string, float> group_scale2_;
};

}  // namespace nvfp4

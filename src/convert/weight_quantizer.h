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

#include "convert/awq_search.h"
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
  // model over the text, opt.calib_ctx tokens a window); for awq also the scale search
  // (awq_search.h). pre_quant_scale_ok: the output can hold a pre_quant_scale (ModelOpt
  // directory; GGUF: no). eligible(name): the output quantizes that float tensor. Throws
  // nvfp4::Error.
  WeightQuantizer(const Checkpoint& ck, const ConvertOptions& opt, bool pre_quant_scale_ok = false,
                  const std::function<bool(const std::string&)>& eligible = {});

  // Quantizes float tensor `name` (w: its to_f32 values, [n_out][n_in]).
  RowMatrix quantize(const std::string& name, const std::vector<float>& w, int64_t n_out, int64_t n_in) const;
  // The tensor scale `name` gets: its own, or its fused group's (the members' largest).
  float scale2(const std::string& name, const std::vector<float>& w) const;
  // awq: the pre_quant_scale (1 / s) written for weight `name`, empty when none (not awq, or
  // folded into its norm).
  std::vector<float> pre_quant_scale(const std::string& name) const;
  // awq: a norm weight with its group's 1 / s folded in (v_i * (1 / s_i)); v unchanged otherwise.
  std::vector<float> fold_norm(const std::string& name, std::vector<float> v) const;
  bool awq() const { return opt_.method == "awq"; }
  bool awq_scaled(const std::string& weight) const { return awq_.group_of.count(weight) != 0; }
  bool folds(const std::string& norm) const { return awq_.norm_of.count(norm) != 0; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  const Checkpoint& ck_;
  ConvertOptions opt_;
  int threads_;
  ChannelMoments moments_;
  AwqPlan awq_;
  std::vector<std::string> notes_;
  // w * s (columns) when `name` has awq scales, else w.
  std::vector<float> scaled(const std::string& name, std::vector<float> w) const;
  mutable std::mutex mu_;
  mutable std::map<std::string, float> group_scale2_;
};

}  // namespace nvfp4

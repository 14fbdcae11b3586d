// `convert --quantize-method awq`: AWQ's per-input-channel scales, searched on calibration
// statistics, in ModelOpt's NVFP4_AWQ form.
//
// For each group of layers that read one input (q/k/v after attn_norm, gate/up after ffn_norm;
// attn_output and ffn_down alone), with m_i the calibration text's mean x_i^2 per input channel
// (calibrate_second_moments): candidate scales s_i = a_i^alpha / sqrt(max * min) with a_i =
// max(sqrt(m_i), 1e-4) (AWQ's s = x^alpha over the activation magnitude, normalised as AWQ does;
// the magnitude here is the RMS, not the mean |x|), alpha in 0, 0.1, .., 1 (ModelOpt awq_lite's
// grid). Each candidate quantizes W * s by rtn (the group's fused tensor scale of the scaled
// weights) and scores sum_j sum_i m_i (W_ji - Q(W s)_ji / s_i)^2 over the group's members (float64,
// rows and channels ascending): the output error of the layer under a diagonal second-moment
// model. The smallest error wins, ties to the smaller alpha; alpha = 0 is s = 1, i.e. rtn, so the
// chosen scales never score worse than rtn. Candidates run on threads, each one's arithmetic
// scalar and fixed: the result does not depend on the thread count or the ISA.
//
// The form (export_hf_checkpoint's): the weight is Q(W * s); the layer's input is multiplied by
// pre_quant_scale p = 1 / s. Where one norm feeds exactly the group (q/k/v, gate/up) p is folded
// into the norm weight (w_i * p_i) and no pre_quant_scale is written; attn_output and ffn_down keep
// a pre_quant_scale tensor, which GGUF cannot hold: for GGUF output those layers keep s = 1.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "nvfp4/calibrate.h"
#include "nvfp4/checkpoint.h"

namespace nvfp4 {

struct AwqGroup {
  std::string norm;                  // "blk.0.attn_norm.weight" folded into; empty: pre_quant_scale
  std::vector<std::string> members;  // weight names, "blk.0.attn_q.weight", ...
  std::vector<float> s;              // chosen scales [n_in]
  double alpha = 0, err = 0, err_rtn = 0;
};

struct AwqPlan {
  std::map<std::string, size_t> group_of;  // weight name -> index in groups
  std::map<std::string, size_t> norm_of;   // norm name -> index in groups
  std::vector<AwqGroup> groups;
};

// eligible(name): the tensor will be quantized from float. pre_quant_scale_ok: the output can hold
// a pre_quant_scale (ModelOpt directory); else attn_output / ffn_down are left out. notes: groups
// left out and why. fused: the tensor scale is the group's (ConvertOptions::scale2 == "fused").
AwqPlan plan_awq(const Checkpoint& ck, const ChannelMoments& m2, bool pre_quant_scale_ok, bool fused, int threads,
                 const std::function<bool(const std::string&)>& eligible, std::vector<std::string>& notes,
                 const std::function<void(const std::string&)>& log);

}  // namespace nvfp4

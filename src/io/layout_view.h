// A checkpoint seen in another GGUF layout (io/hybrid_layout.h, io/nemotron_layout.h): each tensor
// of the view is one of the underlying checkpoint's, renamed, with rows picked, column blocks
// permuted, its values mapped (A_log <-> -exp(A_log), a norm's + 1) or float tensors stacked by
// rows, and its metadata the
// underlying keys (some renamed or hidden) plus keys the layout adds. Rows, column blocks and NVFP4
// bytes move exactly; a tensor whose values are mapped is F32.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {

enum class LayoutFn { none, plus_one, neg_exp, log_neg };

struct LayoutSource {
  std::string base;               // the underlying tensor
  std::vector<int64_t> rows;      // row r of this tensor is base row rows[r]; empty: all, in order
  int64_t col_block = 0;          // columns moved in blocks of this width:
  std::vector<int64_t> col_perm;  //   block j of this tensor is base block col_perm[j]
  LayoutFn fn = LayoutFn::none;
  bool f32 = false;               // presented as F32 (values mapped, or llama.cpp stores it so)
  std::vector<float> exact;       // ssm_a_log read from the exact key (checked against ssm_a)
  std::vector<std::string> then;  // tensors whose rows follow the base's (Gemma 4's stacked gate and up;
                                  // NVFP4 ones of the base's tensor scale)
  float scale2_mult = 1.0f;       // an NVFP4 tensor scale times this (Gemma 4's per-expert scale folded in)
  std::vector<float> constant;    // no base: a tensor of these F32 values the layout implies
  bool identity() const {
    return rows.empty() && col_perm.empty() && fn == LayoutFn::none && !f32 && then.empty() && scale2_mult == 1.0f && constant.empty();
  }
};

LayoutSource layout_plain(const std::string& base);
LayoutSource layout_rows(const std::string& base, std::vector<int64_t> rows, bool f32 = false);

class LayoutView final : public Checkpoint {
 public:
  // owned: the underlying checkpoint when the view owns it (a file read in another layout), else
  // null (`base` must outlive the view).
  LayoutView(const Checkpoint& base, std::unique_ptr<Checkpoint> owned);

  const CheckpointInfo& info() const override { return info_; }
  const gguf::Value* meta(const std::string& key) const override;
  void forget_meta(const std::string& key) override;
  std::vector<std::string> meta_keys() const override;
  const std::vector<TensorEntry>& tensors() const override { return entries_; }
  RowMatrix nvfp4(const std::string& name) const override;
  std::vector<float> pre_quant_scale(const std::string& name) const override;
  std::vector<float> to_f32(const std::string& name) const override;
  bool raw_float(const std::string& name, DType& dtype, const void*& data) const override;
  bool raw_ggml(const std::string& name, uint32_t& type, const void*& data) const override;
  void release(const std::string& name) const override;
  void release_all() const override;

  // Notes the MTP blocks a reader left out (n_tensors under blk.<first_block>.* and after), if any.
  void set_aside_mtp(int64_t n_tensors, int64_t first_block);

  // Adds tensor `name` of shape `shape` (empty: the base's, rows as picked) made from `s.base`.
  void add(const std::string& name, LayoutSource s, std::vector<int64_t> shape = {});
  // Adds tensor `name` [values.size()], F32, of these values (a tensor the layout implies).
  void add_constant(const std::string& name, std::vector<float> values);

  std::map<std::string, gguf::Value> extra;       // keys the layout adds (or replaces)
  std::map<std::string, std::string> alias;       // a key of the view -> the underlying key it shows
  std::set<std::string> hidden;                   // underlying keys the view does not show
  CheckpointInfo info_;                           // the base's (the layout may set tensors aside)

 private:
  const std::string& path() const { return base_.info().path; }
  const LayoutSource& src(const std::string& name) const;

  const Checkpoint& base_;
  std::unique_ptr<Checkpoint> owned_;
  std::vector<TensorEntry> entries_;
  std::map<std::string, LayoutSource> src_;
};

// "blk.12.ssm_a" -> (12, "ssm_a"); false for a name outside the layers.
bool layout_split_layer(const std::string& name, int64_t& n, std::string& rest);
// general.architecture, or "" when absent.
std::string layout_arch(const Checkpoint& ck);
float layout_neg_exp(float a);
// The q and k rows of each head of hd rows as llama.cpp's converter permutes them for its
// interleaved RoPE (LlamaModel.permute; Muse Glimmer's _unpermute_for_rope): its row 2i + j of a
// head is HF's row j * hd / 2 + i. to_llamacpp: row r of the result is HF row rows[r]; else the
// inverse. n_rows a multiple of hd.
std::vector<int64_t> layout_qk_rows(int64_t n_rows, int64_t hd, bool to_llamacpp);

}  // namespace nvfp4

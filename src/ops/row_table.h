// A table a model looks rows up in and never multiplies by (Gemma 4's per-layer embeddings: one
// row of n_layer x 256 values per token, a quarter of E2B's bytes). A float table (F32, F16, BF16)
// is read where the checkpoint's mapped file holds it, widened row by row as it is looked up (the
// pages a step touches are the rows of its tokens); `keep` holds the mapping alive. Any other
// storage (NVFP4, FP8, Q8_0, or a table not in a mapped file) through a Head, whose rows are
// decoded as the embedding's are (ops/head.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nvfp4/dense.h"
#include "ops/head.h"

namespace nvfp4 {

class RowTable {
 public:
  static RowTable mapped(DType dtype, const void* data, int64_t rows, int64_t cols, std::shared_ptr<const void> keep);
  static RowTable held(Head h);
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool in_place() const { return data_ != nullptr; }
  // Row r as float32 (exact: a widening, or the Head's decoding).
  void row(int64_t r, float* out) const;
  size_t bytes() const;  // as stored (mapped or held)
  std::string type_name() const;

 private:
  int64_t rows_ = 0, cols_ = 0;
  DType dtype_ = DType::f32;
  const void* data_ = nullptr;
  std::shared_ptr<const void> keep_;
  Head head_;
};

}  // namespace nvfp4

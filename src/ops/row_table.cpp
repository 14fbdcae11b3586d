#include "ops/row_table.h"

#include <cstring>

#include "nvfp4/codec.h"

namespace nvfp4 {

RowTable RowTable::mapped(DType dtype, const void* data, int64_t rows, int64_t cols, std::shared_ptr<const void> keep) {
  RowTable t;
  t.rows_ = rows;
  t.cols_ = cols;
  t.dtype_ = dtype;
  t.data_ = data;
  t.keep_ = std::move(keep);
  return t;
}

RowTable RowTable::held(Head h) {
  RowTable t;
  t.rows_ = h.n_out();
  t.cols_ = h.n_in();
  t.head_ = std::move(h);
  return t;
}

void RowTable::row(int64_t r, float* out) const {
  if (!data_) return head_.row(r, out);
  const size_t off = static_cast<size_t>(r) * static_cast<size_t>(cols_);
  switch (dtype_) {
    case DType::f32:
      std::memcpy(out, static_cast<const float*>(data_) + off, static_cast<size_t>(cols_) * 4);
      return;
    case DType::f16: {
      const uint16_t* p = static_cast<const uint16_t*>(data_) + off;
      for (int64_t i = 0; i < cols_; ++i) out[i] = half_to_float(p[i]);
      return;
    }
    default: {  // bf16
      const uint16_t* p = static_cast<const uint16_t*>(data_) + off;
      for (int64_t i = 0; i < cols_; ++i) out[i] = bf16_to_float(p[i]);
      return;
    }
  }
}

size_t RowTable::bytes() const {
  if (!data_) return head_.bytes();
  return static_cast<size_t>(rows_ * cols_) * (dtype_ == DType::f32 ? 4 : 2);
}

std::string RowTable::type_name() const {
  if (!data_) return head_.type_name();
  return dtype_ == DType::f32 ? "F32" : dtype_ == DType::f16 ? "F16" : "BF16";
}

}  // namespace nvfp4

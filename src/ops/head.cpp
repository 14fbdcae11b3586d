// Head: the output head / embedding in its stored form (head.h).
#include "ops/head.h"

#include <vector>

#include "kernels/packed.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "nvfp4/q8_0.h"
#include "nvfp4/quantize.h"

namespace nvfp4 {

Head Head::dense(PinnedDense d) {
  Head h;
  h.type_ = d.is_f16() ? Type::f16 : d.is_bf16() ? Type::bf16 : Type::f32;
  h.n_out_ = d.n_out();
  h.n_in_ = d.n_in();
  h.dense_ = std::move(d);
  return h;
}

Head Head::q8_0(const uint8_t* blocks, int64_t n_out, int64_t n_in, bool integer) {
  Head h;
  h.type_ = Type::q8_0;
  h.n_out_ = n_out;
  h.n_in_ = n_in;
  h.q8_int_ = integer;
  if (integer) {
    h.q8_ = kern::HeadQ8::prepare(blocks, n_out, n_in);
  } else {
    std::vector<float> w(static_cast<size_t>(n_out * n_in));
    const int64_t row_bytes = n_in / kQ8_0Block * static_cast<int64_t>(sizeof(BlockQ8_0));
    for (int64_t r = 0; r < n_out; ++r) dequantize_row_q8_0(blocks + r * row_bytes, n_in, w.data() + r * n_in);
    h.dense_ = PinnedDense::from_f32(std::move(w), n_out, n_in);
  }
  return h;
}

Head Head::nvfp4(RowMatrix w, float input_scale, const std::string& name, bool forward, bool rows) {
  Head h;
  h.type_ = Type::nvfp4;
  h.n_out_ = w.n_out;
  h.n_in_ = w.n_in;
  if (forward) {
    h.lin_ = Linear::prepare(w.view(), input_scale, name);
    h.has_lin_ = true;
  }
  if (rows) h.rows_ = std::move(w);
  return h;
}

Head Head::prefix(int64_t n) const {
  if (n <= 0 || n > n_out_ || n % 64 != 0)
    throw Error("", "--draft-vocab", "the head's first rows", "a multiple of 64 in 64 .. " + std::to_string(n_out_), std::to_string(n));
  if (type_ == Type::nvfp4)
    throw Error("", "--draft-vocab", "a draft vocabulary's head", "F32, F16, BF16 or Q8_0", "NVFP4 (its rows are packed for the kernels)");
  Head h;
  h.type_ = type_;
  h.n_out_ = n;
  h.n_in_ = n_in_;
  h.q8_int_ = q8_int_;
  if (type_ == Type::q8_0 && q8_int_)
    h.q8_ = q8_.prefix(n);
  else
    h.dense_ = dense_.prefix(n);
  return h;
}

std::string Head::type_name() const {
  switch (type_) {
    case Type::f32: return "F32";
    case Type::f16: return "F16";
    case Type::bf16: return "BF16";
    case Type::q8_0: return "Q8_0";
    case Type::nvfp4: return "NVFP4";
  }
  return "?";
}

Mode Head::lin_mode(Mode m, const Linear& l) {
  return m == Mode::w4a4 && !l.has_input_scale() ? Mode::a16q8 : m;
}

void Head::forward(Mode mode, const float* x, int64_t n, float* y, ThreadPool& pool) const {
  if (has_lin_) return lin_.forward(lin_mode(mode, lin_), x, n, y, pool);
  if (type_ == Type::q8_0 && q8_int_) {
    const kern::KernelTable& k = kern::table(active_isa());
    kern::ActQ8 a;
    a.shape(n, n_in_);
    k.prep_q8(x, 0, n, a);
    const kern::HeadQ8Fn fn = k.head_q8;
    // One stretch of rows per thread for a few columns (the rows stream from DRAM, see
    // thread_pool.h); the default chunks for a prompt's windows.
    pool.run(n_out_, [&](int64_t b, int64_t e) { fn(q8_, a, b, e, y); }, kern::kHeadRowPad,
             ThreadPool::per_thread_for(n));
    return;
  }
  dense_.forward(x, n, y, pool);
}

void Head::row(int64_t r, float* out) const {
  if (type_ == Type::nvfp4) {
    const RowView v{1, n_in_, rows_.codes.data() + r * (n_in_ / 2), rows_.scales.data() + r * (n_in_ / kGroup), rows_.scale2};
    dequantize(v, out);
    return;
  }
  if (type_ == Type::q8_0 && q8_int_) {
    for (int64_t i = 0; i < n_in_; ++i) out[i] = static_cast<float>(q8_.code(r, i)) * half_to_float(q8_.scale(r, i / kQ8_0Block));
    return;
  }
  dense_.row(r, out);
}

std::string Head::kernel_name(Mode mode) const {
  if (has_lin_) return lin_.kernel_name(lin_mode(mode, lin_), 1);
  if (type_ == Type::q8_0 && q8_int_) return kern::table(active_isa()).head_q8_name;
  return (type_ == Type::q8_0 ? "q8_0 dequantized, " : "") + dense_.kernel_name();
}

size_t Head::bytes() const {
  if (has_lin_) return static_cast<size_t>(lin_.weight_bytes());
  if (type_ == Type::nvfp4) return rows_.codes.size() + rows_.scales.size() + 4;
  if (type_ == Type::q8_0 && q8_int_) return q8_.bytes();
  return dense_.bytes();
}

}  // namespace nvfp4

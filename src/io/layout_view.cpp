// The view of io/layout_view.h.
#include "io/layout_view.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "nvfp4/error.h"

namespace nvfp4 {

LayoutSource layout_plain(const std::string& base) {
  LayoutSource s;
  s.base = base;
  return s;
}

LayoutSource layout_rows(const std::string& base, std::vector<int64_t> rows, bool f32) {
  LayoutSource s = layout_plain(base);
  s.rows = std::move(rows);
  s.f32 = f32;
  return s;
}

std::vector<int64_t> layout_qk_rows(int64_t n_rows, int64_t hd, bool to_llamacpp) {
  std::vector<int64_t> rows(static_cast<size_t>(n_rows));
  for (int64_t h = 0; h < n_rows / hd; ++h)
    for (int64_t i = 0; i < hd / 2; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t ggml = h * hd + 2 * i + j, hf = h * hd + j * (hd / 2) + i;
        rows[static_cast<size_t>(to_llamacpp ? ggml : hf)] = to_llamacpp ? hf : ggml;
      }
  return rows;
}

float layout_neg_exp(float a) { return static_cast<float>(-std::exp(static_cast<double>(a))); }

std::string layout_arch(const Checkpoint& ck) {
  const gguf::Value* a = ck.meta("general.architecture");
  return a && a->type == gguf::ValueType::string ? a->s : std::string();
}

bool layout_split_layer(const std::string& name, int64_t& n, std::string& rest) {
  if (name.rfind("blk.", 0) != 0) return false;
  size_t k = 4;
  while (k < name.size() && std::isdigit(static_cast<unsigned char>(name[k]))) ++k;
  if (k == 4 || k >= name.size() || name[k] != '.' || k - 4 > 9) return false;
  n = std::stoll(name.substr(4, k - 4));
  rest = name.substr(k + 1);
  return true;
}

LayoutView::LayoutView(const Checkpoint& base, std::unique_ptr<Checkpoint> owned)
    : info_(base.info()), base_(base), owned_(std::move(owned)) {}

const gguf::Value* LayoutView::meta(const std::string& key) const {
  if (const auto it = extra.find(key); it != extra.end()) return &it->second;
  if (const auto it = alias.find(key); it != alias.end()) return base_.meta(it->second);
  return hidden.count(key) ? nullptr : base_.meta(key);
}

void LayoutView::forget_meta(const std::string& key) {
  if (!owned_) return;
  const auto it = alias.find(key);
  owned_->forget_meta(it != alias.end() ? it->second : key);
}

std::vector<std::string> LayoutView::meta_keys() const {
  std::vector<std::string> k;
  for (const std::string& key : base_.meta_keys())
    if (!hidden.count(key) && !alias.count(key) && !extra.count(key)) k.push_back(key);
  for (const auto& [key, from] : alias)
    if (!extra.count(key) && base_.meta(from)) k.push_back(key);
  for (const auto& [key, v] : extra) k.push_back(key);
  return k;
}

RowMatrix LayoutView::nvfp4(const std::string& name) const {
  const LayoutSource& s = src(name);
  if (s.base.empty()) throw Error(path(), name, "a constant tensor read as NVFP4", "F32", "NVFP4");
  RowMatrix m = base_.nvfp4(s.base);
  if (s.fn != LayoutFn::none) throw Error(path(), name, "values mapped on an NVFP4 tensor", "a float tensor", "NVFP4");
  for (const std::string& t : s.then) {  // rows stacked: one tensor scale for all (checked in add())
    const RowMatrix more = base_.nvfp4(t);
    m.codes.insert(m.codes.end(), more.codes.begin(), more.codes.end());
    m.scales.insert(m.scales.end(), more.scales.begin(), more.scales.end());
    m.n_out += more.n_out;
  }
  m.scale2 *= s.scale2_mult;
  const int64_t cb = m.n_in / 2, sb = m.n_in / kGroup;
  if (!s.rows.empty()) {
    RowMatrix o = m;
    o.n_out = static_cast<int64_t>(s.rows.size());
    o.codes.resize(static_cast<size_t>(o.n_out * cb));
    o.scales.resize(static_cast<size_t>(o.n_out * sb));
    for (int64_t r = 0; r < o.n_out; ++r) {
      const int64_t from = s.rows[static_cast<size_t>(r)];
      std::copy_n(m.codes.begin() + from * cb, cb, o.codes.begin() + r * cb);
      std::copy_n(m.scales.begin() + from * sb, sb, o.scales.begin() + r * sb);
    }
    m = std::move(o);
  }
  if (!s.col_perm.empty()) {
    if (s.col_block % kGroup != 0)
      throw Error(path(), name, "NVFP4 columns move in whole 16-value blocks: the value head width", "a multiple of 16",
                  std::to_string(s.col_block));
    const int64_t bc = s.col_block / 2, bs = s.col_block / kGroup;
    RowMatrix o = m;
    for (int64_t r = 0; r < m.n_out; ++r)
      for (size_t j = 0; j < s.col_perm.size(); ++j) {
        const int64_t from = s.col_perm[j];
        std::copy_n(m.codes.begin() + r * cb + from * bc, bc, o.codes.begin() + r * cb + static_cast<int64_t>(j) * bc);
        std::copy_n(m.scales.begin() + r * sb + from * bs, bs, o.scales.begin() + r * sb + static_cast<int64_t>(j) * bs);
      }
    m = std::move(o);
  }
  return m;
}

std::vector<float> LayoutView::pre_quant_scale(const std::string& name) const {
  const LayoutSource& s = src(name);
  if (s.base.empty()) return {};
  std::vector<float> p = base_.pre_quant_scale(s.base);
  if (!p.empty() && !s.col_perm.empty())
    throw Error(path(), name, "a pre_quant_scale on a tensor whose columns are reordered", "none", "present");
  return p;
}

std::vector<float> LayoutView::to_f32(const std::string& name) const {
  const LayoutSource& s = src(name);
  if (!s.exact.empty()) return s.exact;
  if (s.base.empty()) return s.constant;
  std::vector<float> v = base_.to_f32(s.base);
  for (const std::string& t : s.then) {
    const std::vector<float> more = base_.to_f32(t);
    v.insert(v.end(), more.begin(), more.end());
  }
  const TensorEntry& be = base_.tensor(s.base);
  int64_t n_rows = be.shape.empty() ? 1 : be.shape[0];
  for (const std::string& t : s.then) n_rows += base_.tensor(t).shape[0];
  const int64_t w = n_rows > 0 ? static_cast<int64_t>(v.size()) / n_rows : 0;  // conv1d [C, 1, K]: K
  if (!s.rows.empty()) {
    std::vector<float> o(s.rows.size() * static_cast<size_t>(w));
    for (size_t r = 0; r < s.rows.size(); ++r)
      std::copy_n(v.begin() + s.rows[r] * w, w, o.begin() + static_cast<int64_t>(r) * w);
    v = std::move(o);
  }
  if (!s.col_perm.empty()) {
    std::vector<float> o(v.size());
    const int64_t rows = static_cast<int64_t>(v.size()) / w;
    for (int64_t r = 0; r < rows; ++r)
      for (size_t j = 0; j < s.col_perm.size(); ++j)
        std::copy_n(v.begin() + r * w + s.col_perm[j] * s.col_block, s.col_block,
                    o.begin() + r * w + static_cast<int64_t>(j) * s.col_block);
    v = std::move(o);
  }
  for (float& x : v) {
    switch (s.fn) {
      case LayoutFn::none: break;
      case LayoutFn::plus_one: x += 1.0f; break;  // in float, as transformers' (1.0 + w.float())
      case LayoutFn::neg_exp: x = layout_neg_exp(x); break;
      case LayoutFn::log_neg:
        if (!(x < 0.0f) || !std::isfinite(x))
          throw Error(path(), s.base, "ssm_a holds -exp(A_log): every value negative and finite", "< 0", std::to_string(x));
        x = static_cast<float>(std::log(-static_cast<double>(x)));
        break;
    }
  }
  return v;
}

bool LayoutView::raw_float(const std::string& name, DType& dtype, const void*& data) const {
  const LayoutSource& s = src(name);
  return s.identity() && base_.raw_float(s.base, dtype, data);
}

bool LayoutView::raw_ggml(const std::string& name, uint32_t& type, const void*& data) const {
  const LayoutSource& s = src(name);
  return s.identity() && base_.raw_ggml(s.base, type, data);
}

void LayoutView::release(const std::string& name) const {
  const auto it = src_.find(name);
  if (it == src_.end() || it->second.base.empty()) return;
  base_.release(it->second.base);
  for (const std::string& t : it->second.then) base_.release(t);
}

void LayoutView::release_all() const { base_.release_all(); }

void LayoutView::set_aside_mtp(int64_t n_tensors, int64_t first_block) {
  if (n_tensors > 0)
    info_.set_aside.push_back("multi-token-prediction (MTP) layers: " + std::to_string(n_tensors) + " tensors under blk." +
                              std::to_string(first_block) + ".* and after (nextn_predict_layers; not run)");
}

void LayoutView::add(const std::string& name, LayoutSource s, std::vector<int64_t> shape) {
  TensorEntry e = base_.tensor(s.base);
  // The rows and column blocks the layout moves must be there (the loader checks the shapes it
  // sees, which are this view's: a short base tensor is refused here, before any read).
  const auto dims = [](const std::vector<int64_t>& v) {
    std::string o = "[";
    for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + std::to_string(v[i]);
    return o + "]";
  };
  const int64_t base_rows = e.shape.empty() ? 1 : e.shape[0];
  const int64_t need = s.rows.empty() ? 0 : *std::max_element(s.rows.begin(), s.rows.end()) + 1;
  if (need > base_rows)
    throw Error(path(), s.base, "rows of a tensor that this layout reorders or splits (ssm.* metadata)",
                "at least " + std::to_string(need) + " rows", dims(e.shape));
  if (!s.col_perm.empty() &&
      (e.shape.size() != 2 || e.shape[1] != s.col_block * static_cast<int64_t>(s.col_perm.size())))
    throw Error(path(), s.base, "columns of out_proj: one block per value head (ssm.* metadata)",
                "[n, " + std::to_string(s.col_block * static_cast<int64_t>(s.col_perm.size())) + "]", dims(e.shape));
  for (const std::string& t : s.then) {
    const TensorEntry& m = base_.tensor(t);
    if (m.storage == Storage::nvfp4 && e.storage == Storage::nvfp4 && (m.scale2 != e.scale2 || m.input_scale != e.input_scale))
      throw Error(path(), t, "NVFP4 rows stacked under " + s.base + ": one tensor scale and input scale for both",
                  std::to_string(e.scale2) + " / " + std::to_string(e.input_scale), std::to_string(m.scale2) + " / " + std::to_string(m.input_scale));
    if (m.storage != e.storage)
      throw Error(path(), t, "rows stacked under " + s.base + ": the same storage", e.storage_name, m.storage_name);
    if (m.shape.size() != e.shape.size() || m.shape.size() < 2 || !std::equal(m.shape.begin() + 1, m.shape.end(), e.shape.begin() + 1))
      throw Error(path(), t, "rows stacked under " + s.base + ": the same columns", dims(e.shape), dims(m.shape));
    e.shape[0] += m.shape[0];
  }
  e.name = name;
  e.scale2 *= s.scale2_mult;
  if (!shape.empty()) e.shape = std::move(shape);
  if (!s.rows.empty()) e.shape[0] = static_cast<int64_t>(s.rows.size());
  if (s.f32) {
    if (e.storage == Storage::nvfp4) throw Error(path(), s.base, "an NVFP4 tensor where llama.cpp keeps F32", "a float tensor", "NVFP4");
    e.storage = Storage::f32;
    e.storage_name = "F32";
    e.bits_per_weight = 32;
  }
  entries_.push_back(std::move(e));
  src_[name] = std::move(s);
}

void LayoutView::add_constant(const std::string& name, std::vector<float> values) {
  TensorEntry e;
  e.name = name;
  e.shape = {static_cast<int64_t>(values.size())};
  e.storage = Storage::f32;
  e.storage_name = "F32";
  e.bits_per_weight = 32;
  entries_.push_back(std::move(e));
  LayoutSource s;
  s.constant = std::move(values);
  src_[name] = std::move(s);
}

const LayoutSource& LayoutView::src(const std::string& name) const {
  const auto it = src_.find(name);
  if (it == src_.end()) throw Error(path(), name, "required tensor missing", "present", "absent");
  return it->second;
}

}  // namespace nvfp4

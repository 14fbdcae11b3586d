// llama.cpp's GGUF layout of the Gated DeltaNet hybrids <-> ours (io/hybrid_layout.h), as a
// LayoutView (io/layout_view.h): value heads reordered, fused projections split, out_proj's
// column blocks permuted, A_log <-> -exp(A_log), the norms' + 1.
#include "io/hybrid_layout.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <map>

#include "io/layout_view.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

struct Dims {
  std::string arch;
  int64_t nk = 0, nv = 0, dk = 0, dv = 0, rep = 0;
  bool reorder = false;  // qwen35 / qwen35moe with nk != nv: value heads tiled in the GGUF
};

Dims dims_of(const Checkpoint& ck) {
  Dims d;
  d.arch = layout_arch(ck);
  const std::string& path = ck.info().path;
  const auto get = [&](const std::string& k) {
    const std::string key = d.arch + "." + k;
    const gguf::Value* v = ck.meta(key);
    if (!v) throw Error(path, key, "missing metadata of a Gated DeltaNet model", "present", "absent");
    const int64_t x = v->as_int(key);
    if (x < 1 || x > (int64_t{1} << 24)) throw Error(path, key, "Gated DeltaNet size", "1 .. 2^24", std::to_string(x));
    return x;
  };
  d.nk = get("ssm.group_count");
  d.nv = get("ssm.time_step_rank");
  d.dk = get("ssm.state_size");
  const int64_t inner = get("ssm.inner_size");
  if (d.nv % d.nk != 0)
    throw Error(path, d.arch + ".ssm.time_step_rank", "value heads a multiple of the key heads (ssm.group_count " + std::to_string(d.nk) + ")",
                "a multiple", std::to_string(d.nv));
  if (inner % d.nv != 0)
    throw Error(path, d.arch + ".ssm.inner_size", "a multiple of the value heads (ssm.time_step_rank " + std::to_string(d.nv) + ")",
                "a multiple", std::to_string(inner));
  d.dv = inner / d.nv;
  d.rep = d.nv / d.nk;
  d.reorder = d.arch != "qwen3next" && d.nk != d.nv;
  return d;
}

// The rows of nv heads of hd rows each, grouped <-> tiled (llama.cpp's _reorder_v_heads): grouped
// head g * rep + r is tiled head r * nk + g. Row i of the result is row result[i] of the other order.
std::vector<int64_t> head_rows(const Dims& d, int64_t hd, bool to_tiled, int64_t offset = 0) {
  std::vector<int64_t> rows(static_cast<size_t>(d.nv * hd));
  for (int64_t g = 0; g < d.nk; ++g)
    for (int64_t r = 0; r < d.rep; ++r) {
      const int64_t grouped = g * d.rep + r, tiled = r * d.nk + g;
      const int64_t out = to_tiled ? tiled : grouped, in = to_tiled ? grouped : tiled;
      for (int64_t i = 0; i < hd; ++i) rows[static_cast<size_t>(out * hd + i)] = offset + in * hd + i;
    }
  return rows;
}

// in_proj_qkv's (and conv1d's) channels: q and k as they are, the v heads reordered.
std::vector<int64_t> qkv_rows(const Dims& d, bool to_tiled) {
  std::vector<int64_t> rows(static_cast<size_t>(2 * d.nk * d.dk));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
  const auto v = head_rows(d, d.dv, to_tiled, 2 * d.nk * d.dk);
  rows.insert(rows.end(), v.begin(), v.end());
  return rows;
}

// Qwen3-Next's in_proj_qkvz rows (per key head: q, k, its v heads, their z) -> in_proj_qkv's
// (all q, all k, all v) or in_proj_z's.
std::vector<int64_t> qkvz_rows(const Dims& d, bool z) {
  const int64_t group = 2 * d.dk + 2 * d.rep * d.dv;
  std::vector<int64_t> rows;
  const auto part = [&](int64_t at, int64_t n) {
    for (int64_t g = 0; g < d.nk; ++g)
      for (int64_t i = 0; i < n; ++i) rows.push_back(g * group + at + i);
  };
  if (z) {
    part(2 * d.dk + d.rep * d.dv, d.rep * d.dv);
  } else {
    part(0, d.dk);
    part(d.dk, d.dk);
    part(2 * d.dk, d.rep * d.dv);
  }
  return rows;
}

// Qwen3-Next's in_proj_ba rows (per key head: its b, its a) -> in_proj_b's or in_proj_a's.
std::vector<int64_t> ba_rows(const Dims& d, bool a) {
  std::vector<int64_t> rows;
  for (int64_t g = 0; g < d.nk; ++g)
    for (int64_t i = 0; i < d.rep; ++i) rows.push_back(g * 2 * d.rep + (a ? d.rep : 0) + i);
  return rows;
}

std::string exact_key(const std::string& arch) { return arch + ".ssm.a_log_exact"; }

}  // namespace

bool is_hybrid_gguf_arch(const std::string& a) { return a == "qwen35" || a == "qwen35moe" || a == "qwen3next"; }

std::unique_ptr<Checkpoint> hybrid_from_llamacpp(std::unique_ptr<Checkpoint> ck, bool mtp) {
  if (ck->info().container != "gguf" || !is_hybrid_gguf_arch(layout_arch(*ck))) return ck;
  const Dims d = dims_of(*ck);
  const Checkpoint& base = *ck;
  auto v = std::make_unique<LayoutView>(base, std::move(ck));
  // Our writer's exact A_log values, layer by layer (the layers holding ssm_a, ascending).
  const gguf::Value* exact = base.meta(exact_key(d.arch));
  if (exact && exact->type != gguf::ValueType::array)
    throw Error(base.info().path, exact_key(d.arch), "exact A_log values", "an array of F32", "another type");
  // llama.cpp appends a release's MTP layers to the blocks (block_count + nextn_predict_layers,
  // blk.N.nextn.*): set aside, as the HF reader sets mtp.* aside; the model is the first
  // block_count - nextn_predict_layers blocks.
  int64_t n_main = -1, n_mtp_tensors = 0;
  const std::string a = d.arch + ".";
  if (const gguf::Value* nn = base.meta(a + "nextn_predict_layers"); nn && nn->as_int(a + "nextn_predict_layers") > 0) {
    const gguf::Value* bc = base.meta(a + "block_count");
    if (!bc) throw Error(base.info().path, a + "block_count", "missing metadata", "present", "absent");
    const int64_t blocks = bc->as_int(a + "block_count"), mtp = nn->as_int(a + "nextn_predict_layers");
    if (mtp >= blocks)
      throw Error(base.info().path, a + "nextn_predict_layers", "MTP layers after the model's blocks", "less than block_count " + std::to_string(blocks),
                  std::to_string(mtp));
    n_main = blocks - mtp;
    gguf::Value b;
    b.type = gguf::ValueType::u32;
    b.u = static_cast<uint64_t>(n_main);
    v->extra[a + "block_count"] = b;
    if (const gguf::Value* r = base.meta(a + "attention.recurrent_layers"); r && r->type == gguf::ValueType::array && static_cast<int64_t>(r->arr.size()) == blocks) {
      gguf::Value t;
      t.type = gguf::ValueType::array;
      t.arr = gguf::Array(r->arr.elem_type());
      for (int64_t l = 0; l < n_main; ++l) t.arr.push_back(r->arr.at(static_cast<size_t>(l)));
      v->extra[a + "attention.recurrent_layers"] = std::move(t);
    }
  }
  size_t exact_at = 0;
  for (const TensorEntry& e : base.tensors()) {
    int64_t n = 0;
    std::string rest;
    if (!layout_split_layer(e.name, n, rest)) {
      v->add(e.name, layout_plain(e.name));
      continue;
    }
    if (n_main >= 0 && n >= n_main && !mtp) {
      ++n_mtp_tensors;
      continue;
    }
    const std::string b = "blk." + std::to_string(n) + ".";
    const bool ro = d.reorder;
    if (rest == "post_attention_norm.weight") {
      v->add(b + "ffn_norm.weight", layout_plain(e.name));
    } else if (rest == "ssm_a") {
      LayoutSource s = layout_rows(e.name, ro ? head_rows(d, 1, false) : std::vector<int64_t>{}, true);
      s.fn = LayoutFn::log_neg;
      if (exact) {
        const std::string key = exact_key(d.arch);
        if (exact->arr.size() < exact_at + static_cast<size_t>(d.nv))
          throw Error(base.info().path, key, "exact A_log values: one per value head of every linear layer",
                      "at least " + std::to_string(exact_at + static_cast<size_t>(d.nv)), std::to_string(exact->arr.size()));
        const std::vector<float> file = base.to_f32(e.name);
        if (static_cast<int64_t>(file.size()) != d.nv)
          throw Error(base.info().path, e.name, "one value per value head", std::to_string(d.nv), std::to_string(file.size()));
        std::vector<float> a(file.size());  // ssm_a in our order
        for (int64_t h = 0; h < d.nv; ++h) a[static_cast<size_t>(h)] = file[static_cast<size_t>(s.rows.empty() ? h : s.rows[static_cast<size_t>(h)])];
        for (int64_t h = 0; h < d.nv; ++h) {
          const float x = static_cast<float>(exact->arr.as_float(exact_at + static_cast<size_t>(h), key));
          if (std::bit_cast<uint32_t>(layout_neg_exp(x)) != std::bit_cast<uint32_t>(a[static_cast<size_t>(h)]))
            throw Error(base.info().path, key, "exact A_log value disagrees with " + e.name + " (value head " + std::to_string(h) + ")",
                        std::to_string(a[static_cast<size_t>(h)]) + " = -exp(A_log)", std::to_string(layout_neg_exp(x)));
          s.exact.push_back(x);
        }
        exact_at += static_cast<size_t>(d.nv);
      }
      v->add(b + "ssm_a_log", std::move(s));
    } else if (ro && rest == "ssm_dt.bias") {
      v->add(e.name, layout_rows(e.name, head_rows(d, 1, false)));
    } else if (ro && (rest == "attn_qkv.weight" || rest == "ssm_conv1d.weight")) {
      v->add(e.name, layout_rows(e.name, qkv_rows(d, false)));
    } else if (ro && rest == "attn_gate.weight") {
      v->add(e.name, layout_rows(e.name, head_rows(d, d.dv, false)));
    } else if (ro && (rest == "ssm_beta.weight" || rest == "ssm_alpha.weight")) {
      v->add(e.name, layout_rows(e.name, head_rows(d, 1, false)));
    } else if (ro && rest == "ssm_out.weight") {
      LayoutSource s = layout_plain(e.name);
      s.col_block = d.dv;
      s.col_perm = head_rows(d, 1, false);
      v->add(e.name, std::move(s));
    } else if (d.arch == "qwen3next" && rest == "ssm_ba.weight") {
      v->add(b + "ssm_beta.weight", layout_rows(e.name, ba_rows(d, false)));
      v->add(b + "ssm_alpha.weight", layout_rows(e.name, ba_rows(d, true)));
    } else if (d.arch == "qwen3next" && rest == "ssm_in.weight") {  // llama.cpp's older qwen3next files
      v->add(b + "attn_qkv.weight", layout_rows(e.name, qkvz_rows(d, false)));
      v->add(b + "attn_gate.weight", layout_rows(e.name, qkvz_rows(d, true)));
    } else {
      v->add(e.name, layout_plain(e.name));
    }
  }
  v->set_aside_mtp(n_mtp_tensors, n_main);
  if (exact && exact_at != exact->arr.size())
    throw Error(base.info().path, exact_key(d.arch), "exact A_log values: one per value head of every linear layer",
                std::to_string(exact_at), std::to_string(exact->arr.size()));
  return v;
}

std::unique_ptr<Checkpoint> hybrid_to_llamacpp(const Checkpoint& ck) {
  const std::string arch = layout_arch(ck);
  if (!is_hybrid_gguf_arch(arch)) return nullptr;
  const Dims d = dims_of(ck);
  auto v = std::make_unique<LayoutView>(ck, nullptr);
  const bool plus_one = ck.info().container != "gguf";  // HF's zero-centred norms; a GGUF's hold the 1
  gguf::Value exact;
  exact.type = gguf::ValueType::array;
  exact.arr = gguf::Array(gguf::ValueType::f32);
  const auto norm = [&](const std::string& from, const std::string& to) {
    LayoutSource s = layout_plain(from);
    s.f32 = true;
    if (plus_one) s.fn = LayoutFn::plus_one;
    v->add(to, std::move(s));
  };
  for (const TensorEntry& e : ck.tensors()) {
    int64_t n = 0;
    std::string rest;
    if (!layout_split_layer(e.name, n, rest)) {
      if (e.name == "output_norm.weight") norm(e.name, e.name);
      else v->add(e.name, layout_plain(e.name));
      continue;
    }
    const std::string b = "blk." + std::to_string(n) + ".";
    const bool ro = d.reorder;
    if (rest == "ffn_norm.weight") {
      norm(e.name, b + "post_attention_norm.weight");
    } else if (rest == "attn_norm.weight" || rest == "attn_q_norm.weight" || rest == "attn_k_norm.weight") {
      norm(e.name, e.name);
    } else if (rest == "ssm_a_log") {
      for (float x : ck.to_f32(e.name)) {
        gguf::Value f;
        f.type = gguf::ValueType::f32;
        f.f = x;
        exact.arr.push_back(f);
      }
      LayoutSource s = layout_rows(e.name, ro ? head_rows(d, 1, true) : std::vector<int64_t>{}, true);
      s.fn = LayoutFn::neg_exp;
      v->add(b + "ssm_a", std::move(s));
    } else if (rest == "ssm_dt.bias") {
      v->add(e.name, layout_rows(e.name, ro ? head_rows(d, 1, true) : std::vector<int64_t>{}, true));
    } else if (rest == "ssm_conv1d.weight") {
      const int64_t kernel = e.shape.back();
      v->add(e.name, layout_rows(e.name, ro ? qkv_rows(d, true) : std::vector<int64_t>{}, true), {e.shape[0], kernel});
    } else if (ro && rest == "attn_qkv.weight") {
      v->add(e.name, layout_rows(e.name, qkv_rows(d, true)));
    } else if (ro && rest == "attn_gate.weight") {
      v->add(e.name, layout_rows(e.name, head_rows(d, d.dv, true)));
    } else if (ro && (rest == "ssm_beta.weight" || rest == "ssm_alpha.weight")) {
      v->add(e.name, layout_rows(e.name, head_rows(d, 1, true)));
    } else if (ro && rest == "ssm_out.weight") {
      LayoutSource s = layout_plain(e.name);
      s.col_block = d.dv;
      s.col_perm = head_rows(d, 1, true);
      v->add(e.name, std::move(s));
    } else if (arch == "qwen3next" && rest == "ssm_in.weight") {
      v->add(b + "attn_qkv.weight", layout_rows(e.name, qkvz_rows(d, false)));
      v->add(b + "attn_gate.weight", layout_rows(e.name, qkvz_rows(d, true)));
    } else {
      v->add(e.name, layout_plain(e.name));
    }
  }
  if (!exact.arr.empty()) v->extra[exact_key(arch)] = std::move(exact);
  // Which layers are recurrent, as llama.cpp's converter writes it beside full_attention_interval.
  const std::string recurrent = arch + ".attention.recurrent_layers";
  if (const gguf::Value* bc = ck.meta(arch + ".block_count"); bc && !ck.meta(recurrent)) {
    gguf::Value r;
    r.type = gguf::ValueType::array;
    r.arr = gguf::Array(gguf::ValueType::boolean);
    for (int64_t l = 0; l < bc->as_int(arch + ".block_count"); ++l) {
      gguf::Value e;
      e.type = gguf::ValueType::boolean;
      e.u = ck.find("blk." + std::to_string(l) + ".ssm_a_log") ? 1 : 0;
      r.arr.push_back(e);
    }
    v->extra[recurrent] = std::move(r);
  }
  // llama.cpp's qwen35 / qwen35moe loaders require rope.dimension_sections. Its converter writes
  // [11, 11, 10, 0] when the config has no mrope_section (the releases' sections: 32 pairs = 64
  // rotated dimensions); ggml's IMROPE asserts that the sections cover at most the rotated pairs,
  // so a model rotating fewer than 64 dimensions gets them split 11:11:10 over its own pairs (text
  // positions are equal in every section: any split rotates as NeoX does).
  const std::string sections = arch + ".rope.dimension_sections";
  if (arch != "qwen3next" && !ck.meta(sections)) {
    const gguf::Value* nr = ck.meta(arch + ".rope.dimension_count");
    const int64_t half = nr ? nr->as_int(arch + ".rope.dimension_count") / 2 : 32;
    const int64_t s0 = half >= 32 ? 11 : (half + 2) / 3, s1 = half >= 32 ? 11 : (half + 1) / 3, s2 = half >= 32 ? 10 : half / 3;
    gguf::Value s;
    s.type = gguf::ValueType::array;
    s.arr = gguf::Array(gguf::ValueType::i32);
    for (int64_t x : {s0, s1, s2, int64_t{0}}) {
      gguf::Value e;
      e.type = gguf::ValueType::i32;
      e.i = x;
      s.arr.push_back(e);
    }
    v->extra[sections] = std::move(s);
  }
  return v;
}

}  // namespace nvfp4

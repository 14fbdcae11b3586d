// llama.cpp's GGUF layout of Muse Glimmer <-> ours (io/muse_layout.h), as a LayoutView
// (io/layout_view.h): q/k rows (and the q/k norms' entries) between RoPE's interleaved order and
// HF's, the zero-centred norms' 1, the q/k norms from qk_scale_factor.
#include "io/muse_layout.h"

#include <cmath>

#include "io/layout_view.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

const std::string kArch = "muse-glimmer";
const std::string kA = kArch + ".";

int64_t num(const Checkpoint& ck, const std::string& key) {
  const gguf::Value* v = ck.meta(kA + key);
  if (!v) throw Error(ck.info().path, kA + key, "metadata of a muse-glimmer model", "present", "absent");
  return v->as_int(kA + key);
}

// The head size (attention.key_length, else embedding_length / head_count), even.
int64_t head_dim(const Checkpoint& ck) {
  const int64_t hd = ck.meta(kA + "attention.key_length") ? num(ck, "attention.key_length")
                                                          : num(ck, "embedding_length") / std::max<int64_t>(1, num(ck, "attention.head_count"));
  if (hd < 2 || hd % 2 != 0 || hd > 65536)
    throw Error(ck.info().path, kA + "attention.key_length", "the attention head size", "even, 2 .. 65536", std::to_string(hd));
  return hd;
}

// attn_q / attn_k (rows) or their norms (entries) in the other order.
LayoutSource qk_source(const Checkpoint& ck, const TensorEntry& e, int64_t hd, bool to_llamacpp, bool f32 = false) {
  const int64_t n = e.shape.empty() ? 1 : e.shape[0];
  if (n % hd != 0)
    throw Error(ck.info().path, e.name, "whole attention heads of attention.key_length rows", "a multiple of " + std::to_string(hd),
                std::to_string(n) + " rows");
  return layout_rows(e.name, layout_qk_rows(n, hd, to_llamacpp), f32);
}

bool is_qk(const std::string& rest) { return rest == "attn_q.weight" || rest == "attn_k.weight"; }
bool is_qk_norm(const std::string& rest) { return rest == "attn_q_norm.weight" || rest == "attn_k_norm.weight"; }
bool is_block_norm(const std::string& rest) {
  return rest == "attn_norm.weight" || rest == "post_attention_norm.weight" || rest == "ffn_norm.weight" || rest == "post_ffw_norm.weight";
}

}  // namespace

std::unique_ptr<Checkpoint> muse_from_llamacpp(std::unique_ptr<Checkpoint> ck) {
  if (ck->info().container != "gguf" || layout_arch(*ck) != kArch) return ck;
  const Checkpoint& base = *ck;
  const int64_t hd = head_dim(base);
  auto v = std::make_unique<LayoutView>(base, std::move(ck));
  for (const TensorEntry& e : base.tensors()) {
    int64_t n = 0;
    std::string rest;
    if (layout_split_layer(e.name, n, rest) && (is_qk(rest) || is_qk_norm(rest))) v->add(e.name, qk_source(base, e, hd, false));
    else v->add(e.name, layout_plain(e.name));
  }
  return v;
}

std::unique_ptr<Checkpoint> muse_to_llamacpp(const Checkpoint& ck) {
  if (layout_arch(ck) != kArch) return nullptr;
  const std::string& path = ck.info().path;
  const int64_t hd = head_dim(ck);
  // llama.cpp's graph has the post-attention / post-FFN norms' eps fixed at 1e-8.
  if (const gguf::Value* e = ck.meta(kA + "attention.post_norm_epsilon"); e && static_cast<float>(e->as_float()) != 1e-8f)
    throw Error(path, kA + "attention.post_norm_epsilon",
                "GGUF output in llama.cpp's muse-glimmer layout: its graph normalizes after attention and FFN with eps 1e-8", "1e-08",
                std::to_string(e->as_float()));
  const bool hf = ck.info().container != "gguf";  // HF's zero-centred norms; a GGUF's hold the 1
  auto v = std::make_unique<LayoutView>(ck, nullptr);
  v->hidden.insert(kA + "attention.qk_scale");
  v->hidden.insert(kA + "attention.post_norm_epsilon");
  for (const TensorEntry& e : ck.tensors()) {
    int64_t n = 0;
    std::string rest;
    if (!layout_split_layer(e.name, n, rest)) {
      v->add(e.name, layout_plain(e.name));
    } else if (is_qk(rest)) {
      v->add(e.name, qk_source(ck, e, hd, true));
    } else if (is_qk_norm(rest)) {
      v->add(e.name, qk_source(ck, e, hd, true, true));
    } else if (is_block_norm(rest) && hf) {
      LayoutSource s = layout_plain(e.name);
      s.fn = LayoutFn::plus_one;
      s.f32 = true;
      v->add(e.name, std::move(s));
    } else {
      v->add(e.name, layout_plain(e.name));
    }
  }
  return v;
}

std::vector<std::pair<std::string, std::vector<float>>> muse_qk_norms(const Checkpoint& ck) {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  if (layout_arch(ck) != kArch || ck.find("blk.0.attn_q_norm.weight")) return out;
  const gguf::Value* s = ck.meta(kA + "attention.qk_scale");
  if (!s) throw Error(ck.info().path, kA + "attention.qk_scale", "q's scale after its norm (qk_scale_factor)", "present", "absent");
  const float q = static_cast<float>(s->as_float(kA + "attention.qk_scale"));
  if (!std::isfinite(q)) throw Error(ck.info().path, kA + "attention.qk_scale", "q's scale after its norm", "finite", std::to_string(q));
  const int64_t hd = head_dim(ck), n_layer = num(ck, "block_count");
  for (int64_t l = 0; l < n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    out.emplace_back(b + "attn_q_norm.weight", std::vector<float>(static_cast<size_t>(hd), q));
    out.emplace_back(b + "attn_k_norm.weight", std::vector<float>(static_cast<size_t>(hd), 1.0f));
  }
  return out;
}

}  // namespace nvfp4

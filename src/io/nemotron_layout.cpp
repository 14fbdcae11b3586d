// llama.cpp's GGUF layout of Nemotron-H <-> ours (io/nemotron_layout.h), as a LayoutView
// (io/layout_view.h): keys renamed between nemotron_h and nemotron_h_moe, the layer pattern <->
// per-layer head_count_kv / feed_forward_length, A_log <-> -exp(A_log), reshapes and renames.
#include "io/nemotron_layout.h"

#include <bit>
#include <cmath>

#include "io/layout_view.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

const std::string kOurs = "nemotron_h";

std::string exact_key(const std::string& arch) { return arch + ".ssm.a_log_exact"; }

// The head size of the attention layers (attention.key_length, else embedding_length / head_count).
int64_t head_dim(const Checkpoint& ck, const std::string& a) {
  const std::string& path = ck.info().path;
  int64_t hd = 0;
  if (const gguf::Value* k = ck.meta(a + "attention.key_length")) {
    hd = k->as_int(a + "attention.key_length");
  } else {
    const gguf::Value* e = ck.meta(a + "embedding_length");
    const gguf::Value* h = ck.meta(a + "attention.head_count");
    if (!e || !h) throw Error(path, a + "attention.key_length", "the attention head size", "present", "absent");
    const int64_t heads = h->as_int(a + "attention.head_count");
    hd = heads > 0 ? e->as_int(a + "embedding_length") / heads : 0;
  }
  if (hd < 2 || hd % 2 != 0 || hd > 65536) throw Error(path, a + "attention.key_length", "the attention head size", "even, 2 .. 65536", std::to_string(hd));
  return hd;
}

// attn_q / attn_k's rows permuted (the tensor's rows a whole number of heads).
LayoutSource qk_source(const Checkpoint& ck, const TensorEntry& e, int64_t hd, bool to_llamacpp) {
  const int64_t n = e.shape.empty() ? 0 : e.shape[0];
  if (n % hd != 0)
    throw Error(ck.info().path, e.name, "whole attention heads of attention.key_length rows", "a multiple of " + std::to_string(hd),
                std::to_string(n) + " rows");
  return layout_rows(e.name, layout_qk_rows(n, hd, to_llamacpp));
}

// Every key "<from>.X" of `base` shown as "<to>.X" (the base's keys hidden).
void rename_keys(const Checkpoint& base, const std::string& from, const std::string& to, LayoutView& v) {
  if (from == to) return;
  for (const std::string& k : base.meta_keys())
    if (k.rfind(from + ".", 0) == 0) {
      v.alias[to + k.substr(from.size())] = k;
      v.hidden.insert(k);
    }
}

// A per-layer array (or a scalar for every layer) of `key`, n_layer long.
std::vector<int64_t> per_layer(const Checkpoint& ck, const std::string& key, int64_t n_layer) {
  const gguf::Value* v = ck.meta(key);
  if (!v) throw Error(ck.info().path, key, "missing metadata of a nemotron_h model (llama.cpp's layout)", "present", "absent");
  if (v->type != gguf::ValueType::array) return std::vector<int64_t>(static_cast<size_t>(n_layer), v->as_int(key));
  if (static_cast<int64_t>(v->arr.size()) < n_layer)
    throw Error(ck.info().path, key, "one value per layer (block_count)", "at least " + std::to_string(n_layer), std::to_string(v->arr.size()));
  std::vector<int64_t> out;
  for (int64_t l = 0; l < n_layer; ++l) out.push_back(v->arr.as_int(static_cast<size_t>(l), key));
  return out;
}

// The one value the layers of a kind share (our layout has one), 0 when no layer has it.
int64_t common_value(const Checkpoint& ck, const std::string& key, const std::vector<int64_t>& xs, const std::string& pattern, char kind) {
  int64_t out = 0;
  for (size_t l = 0; l < xs.size(); ++l) {
    if (pattern[l] != kind) continue;
    if (out != 0 && xs[l] != out)
      throw Error(ck.info().path, key, "the same value on every layer of a kind (this engine has one per model)",
                  std::to_string(out) + " (as the layers before)", std::to_string(xs[l]) + " at layer " + std::to_string(l));
    out = xs[l];
  }
  return out;
}

}  // namespace

std::unique_ptr<Checkpoint> nemotron_from_llamacpp(std::unique_ptr<Checkpoint> ck, bool mtp) {
  const std::string arch = layout_arch(*ck);
  if (ck->info().container != "gguf" || (arch != "nemotron_h" && arch != "nemotron_h_moe")) return ck;
  if (ck->meta(arch + ".layer_pattern")) return ck;  // our earlier layout
  const Checkpoint& base = *ck;
  const std::string& path = base.info().path;
  const std::string a = arch + ".", o = kOurs + ".";
  auto v = std::make_unique<LayoutView>(base, std::move(ck));
  rename_keys(base, arch, kOurs, *v);
  v->extra["general.architecture"] = gguf::text_value(kOurs);
  const gguf::Value* bc = base.meta(a + "block_count");
  if (!bc) throw Error(path, a + "block_count", "missing metadata", "present", "absent");
  const int64_t blocks = bc->as_int(a + "block_count");
  int64_t n_main = blocks;
  if (const gguf::Value* nn = base.meta(a + "nextn_predict_layers"); nn && nn->as_int(a + "nextn_predict_layers") > 0) {
    const int64_t n = nn->as_int(a + "nextn_predict_layers");
    if (n >= blocks)
      throw Error(path, a + "nextn_predict_layers", "MTP blocks after the model's blocks", "less than block_count " + std::to_string(blocks),
                  std::to_string(n));
    if (!mtp) n_main = blocks - n;
  }
  if (n_main < 1 || n_main > (int64_t{1} << 16)) throw Error(path, a + "block_count", "layer count", "1 .. 65536", std::to_string(n_main));
  v->extra[o + "block_count"] = gguf::u32_value(n_main);
  // The layer pattern from the per-layer arrays (llama.cpp's rule: attention where head_count_kv >
  // 0, an FFN where feed_forward_length > 0, else Mamba-2).
  const bool moe = base.meta(a + "expert_count") && base.meta(a + "expert_count")->as_int(a + "expert_count") > 0;
  const std::vector<int64_t> kv = per_layer(base, a + "attention.head_count_kv", n_main);
  const std::vector<int64_t> ff = per_layer(base, a + "feed_forward_length", n_main);
  std::string pattern;
  for (int64_t l = 0; l < n_main; ++l) {
    const size_t i = static_cast<size_t>(l);
    if (kv[i] > 0 && ff[i] > 0)
      throw Error(path, a + "feed_forward_length", "a layer is attention (head_count_kv > 0) or an FFN, not both",
                  "0 where head_count_kv is " + std::to_string(kv[i]), std::to_string(ff[i]) + " at layer " + std::to_string(l));
    pattern += kv[i] > 0 ? '*' : ff[i] > 0 ? (moe ? 'E' : '-') : 'M';
  }
  v->extra[o + "layer_pattern"] = gguf::text_value(pattern);
  v->extra[o + "attention.head_count_kv"] = gguf::u32_value(common_value(base, a + "attention.head_count_kv", kv, pattern, '*'));
  v->extra[o + "feed_forward_length"] = gguf::u32_value(common_value(base, a + "feed_forward_length", ff, pattern, moe ? 'E' : '-'));
  for (const char* k : {"expert_feed_forward_length", "expert_used_count"})
    if (const gguf::Value* x = base.meta(a + k); x && x->type == gguf::ValueType::array)
      v->extra[o + k] = gguf::u32_value(common_value(base, a + k, per_layer(base, a + k, n_main), pattern, 'E'));
  if (!base.meta(a + "attention.layer_norm_rms_epsilon") && base.meta(a + "attention.layer_norm_epsilon"))
    v->alias[o + "attention.layer_norm_rms_epsilon"] = a + "attention.layer_norm_epsilon";
  // llama.cpp does not group the experts: all groups are kept.
  if (base.meta(a + "expert_group_count") && !base.meta(a + "expert_group_used_count"))
    v->alias[o + "expert_group_used_count"] = a + "expert_group_count";
  v->hidden.insert(a + "ssm.a_log_exact");

  const gguf::Value* exact = base.meta(exact_key(arch));
  if (exact && exact->type != gguf::ValueType::array)
    throw Error(path, exact_key(arch), "exact A_log values", "an array of F32", "another type");
  size_t exact_at = 0;
  int64_t n_mtp_tensors = 0;
  for (const TensorEntry& e : base.tensors()) {
    int64_t n = 0;
    std::string rest;
    if (!layout_split_layer(e.name, n, rest)) {
      v->add(e.name, layout_plain(e.name));
      continue;
    }
    if (n >= n_main) {
      ++n_mtp_tensors;
      continue;
    }
    const std::string b = "blk." + std::to_string(n) + ".";
    const auto count = [&](const TensorEntry& t) {
      int64_t c = 1;
      for (int64_t d : t.shape) c *= d;
      return c;
    };
    if (rest == "ssm_a") {
      LayoutSource s = layout_plain(e.name);
      s.f32 = true;
      s.fn = LayoutFn::log_neg;
      if (exact) {
        const std::string key = exact_key(arch);
        const std::vector<float> file = base.to_f32(e.name);
        if (exact->arr.size() < exact_at + file.size())
          throw Error(path, key, "exact A_log values: one per head of every Mamba-2 layer", "at least " + std::to_string(exact_at + file.size()),
                      std::to_string(exact->arr.size()));
        for (size_t h = 0; h < file.size(); ++h) {
          const float x = static_cast<float>(exact->arr.as_float(exact_at + h, key));
          if (std::bit_cast<uint32_t>(layout_neg_exp(x)) != std::bit_cast<uint32_t>(file[h]))
            throw Error(path, key, "exact A_log value disagrees with " + e.name + " (head " + std::to_string(h) + ")",
                        std::to_string(file[h]) + " = -exp(A_log)", std::to_string(layout_neg_exp(x)));
          s.exact.push_back(x);
        }
        exact_at += file.size();
      }
      v->add(b + "ssm_a_log", std::move(s), {count(e)});
    } else if (rest == "ssm_d" || rest == "ssm_norm.weight") {
      LayoutSource s = layout_plain(e.name);
      s.f32 = true;
      v->add(e.name, std::move(s), {count(e)});
    } else if (rest == "attn_q.weight" || rest == "attn_k.weight") {
      v->add(e.name, qk_source(base, e, head_dim(base, a), false));
    } else if (rest == "exp_probs_b.bias") {
      v->add(b + "ffn_gate_inp.e_score_correction_bias", layout_plain(e.name));
    } else if (rest == "ffn_latent_down.weight") {
      v->add(b + "ffn_latent_in.weight", layout_plain(e.name));
    } else if (rest == "ffn_latent_up.weight") {
      v->add(b + "ffn_latent_out.weight", layout_plain(e.name));
    } else {
      v->add(e.name, layout_plain(e.name));
    }
  }
  v->set_aside_mtp(n_mtp_tensors, n_main);
  if (exact && exact_at != exact->arr.size())
    throw Error(path, exact_key(arch), "exact A_log values: one per head of every Mamba-2 layer", std::to_string(exact_at),
                std::to_string(exact->arr.size()));
  return v;
}

std::unique_ptr<Checkpoint> nemotron_to_llamacpp(const Checkpoint& ck) {
  if (layout_arch(ck) != kOurs) return nullptr;
  const std::string& path = ck.info().path;
  const std::string o = kOurs + ".";
  const gguf::Value* pv = ck.meta(o + "layer_pattern");
  if (!pv || pv->type != gguf::ValueType::string) throw Error(path, o + "layer_pattern", "the layer pattern of a nemotron_h model", "a string", "absent");
  const std::string pattern = pv->s;
  const bool moe = pattern.find('E') != std::string::npos;
  if (moe && pattern.find('-') != std::string::npos)
    throw Error(path, o + "layer_pattern",
                "GGUF output in llama.cpp's layout: its nemotron_h_moe makes every FFN layer an MoE layer, so MLP (-) and MoE (E) "
                "layers cannot be in one model there",
                "M, * and E, or M, * and -", pattern);
  const std::string arch = moe ? "nemotron_h_moe" : kOurs, a = arch + ".";
  auto v = std::make_unique<LayoutView>(ck, nullptr);
  rename_keys(ck, kOurs, arch, *v);
  v->hidden.insert(o + "layer_pattern");
  v->hidden.insert(a + "layer_pattern");
  v->alias.erase(a + "layer_pattern");
  v->extra["general.architecture"] = gguf::text_value(arch);
  const auto num = [&](const std::string& k) { return ck.meta(o + k) ? ck.meta(o + k)->as_int(o + k) : int64_t{0}; };
  const int64_t kv = ck.meta(o + "attention.head_count_kv") ? num("attention.head_count_kv") : num("attention.head_count");
  const int64_t ff = moe ? (ck.meta(o + "expert_feed_forward_length") ? num("expert_feed_forward_length") : num("feed_forward_length"))
                         : num("feed_forward_length");
  std::vector<int64_t> kvs, ffs;
  for (char c : pattern) {
    kvs.push_back(c == '*' ? kv : 0);
    ffs.push_back(c == 'E' || c == '-' ? ff : 0);
  }
  v->extra[a + "attention.head_count_kv"] = gguf::u32_array_value(kvs);
  v->extra[a + "feed_forward_length"] = gguf::u32_array_value(ffs);
  if (const gguf::Value* eps = ck.meta(o + "attention.layer_norm_rms_epsilon"); eps && !ck.meta(o + "attention.layer_norm_epsilon"))
    v->extra[a + "attention.layer_norm_epsilon"] = *eps;
  if (moe && ck.meta(o + "expert_shared_feed_forward_length") && !ck.meta(o + "expert_shared_count"))
    v->extra[a + "expert_shared_count"] = gguf::u32_value(1);

  gguf::Value exact;
  exact.type = gguf::ValueType::array;
  exact.arr = gguf::Array(gguf::ValueType::f32);
  const int64_t groups = num("ssm.group_count");
  for (const TensorEntry& e : ck.tensors()) {
    int64_t n = 0;
    std::string rest;
    if (!layout_split_layer(e.name, n, rest)) {
      v->add(e.name, layout_plain(e.name));
      continue;
    }
    const std::string b = "blk." + std::to_string(n) + ".";
    const int64_t len = e.shape.empty() ? 1 : e.shape[0];
    LayoutSource f32 = layout_plain(e.name);
    f32.f32 = true;
    if (rest == "ssm_a_log") {
      for (float x : ck.to_f32(e.name)) {
        gguf::Value f;
        f.type = gguf::ValueType::f32;
        f.f = x;
        exact.arr.push_back(f);
      }
      f32.fn = LayoutFn::neg_exp;
      v->add(b + "ssm_a", std::move(f32), {len, 1});
    } else if (rest == "ssm_d") {
      v->add(e.name, std::move(f32), {len, 1});
    } else if (rest == "ssm_norm.weight") {
      if (groups < 1 || len % groups != 0)
        throw Error(path, e.name, "the gated norm split in ssm.group_count groups", "a multiple of " + std::to_string(groups), std::to_string(len));
      v->add(e.name, std::move(f32), {groups, len / groups});
    } else if (rest == "ssm_conv1d.weight") {
      v->add(e.name, std::move(f32), {e.shape[0], e.shape.back()});
    } else if (rest == "attn_q.weight" || rest == "attn_k.weight") {
      v->add(e.name, qk_source(ck, e, head_dim(ck, o), true));
    } else if (rest == "ffn_gate_inp.e_score_correction_bias") {
      v->add(b + "exp_probs_b.bias", std::move(f32));
    } else if (rest == "ffn_latent_in.weight") {
      v->add(b + "ffn_latent_down.weight", layout_plain(e.name));
    } else if (rest == "ffn_latent_out.weight") {
      v->add(b + "ffn_latent_up.weight", layout_plain(e.name));
    } else {
      v->add(e.name, layout_plain(e.name));
    }
  }
  if (!exact.arr.empty()) v->extra[exact_key(arch)] = std::move(exact);
  return v;
}

}  // namespace nvfp4

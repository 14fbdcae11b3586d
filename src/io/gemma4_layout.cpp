// llama.cpp's GGUF layout of Gemma 4 read as ours (io/gemma4_layout.h), as a LayoutView
// (io/layout_view.h): per-layer arrays and the global / _swa keys turned into ours, rope_freqs
// into the rotated dimensions, the experts' stacked gate/up split by rows, two scales renamed.
#include "io/gemma4_layout.h"

#include <algorithm>
#include <cmath>

#include "io/hf_names.h"
#include "io/layout_view.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

// The one value `key` (a scalar, or an array of one per layer) holds on the layers `pick` says.
template <class Pick>
int64_t value_on(const Checkpoint& ck, const std::string& key, int64_t n_layer, Pick pick, const char* which) {
  const gguf::Value* v = ck.meta(key);
  if (!v) throw Error(ck.info().path, key, "missing metadata of a gemma4 model (llama.cpp's layout)", "present", "absent");
  if (v->type != gguf::ValueType::array) return v->as_int(key);
  if (static_cast<int64_t>(v->arr.size()) != n_layer)
    throw Error(ck.info().path, key, "one value per layer (block_count)", std::to_string(n_layer), std::to_string(v->arr.size()));
  int64_t out = -1;
  for (int64_t l = 0; l < n_layer; ++l) {
    if (!pick(l)) continue;
    const int64_t x = v->arr.as_int(static_cast<size_t>(l), key);
    if (out >= 0 && x != out)
      throw Error(ck.info().path, key, std::string("the same value on every ") + which + " layer (this engine has one per layer type)",
                  std::to_string(out), std::to_string(x) + " at layer " + std::to_string(l));
    out = x;
  }
  return out < 0 ? 0 : out;
}

struct OurKeys {
  int64_t n_layer = 0, hd_s = 0, hd_g = 0, kv_s = 0, kv_g = 0, ff = 0, shared = 0, rot_g = 0;
  bool double_wide = false;
  std::vector<bool> sliding;
};

// Our gemma4 keys (io/hf_config.cpp's gemma4_meta) as numbers.
OurKeys our_keys(const Checkpoint& ck) {
  const std::string a = "gemma4.";
  const std::string& path = ck.info().path;
  const auto num = [&](const std::string& k, int64_t def) -> int64_t {
    const gguf::Value* x = ck.meta(a + k);
    if (!x && def < 0) throw Error(path, a + k, "metadata of a gemma4 model", "present", "absent");
    return x ? x->as_int(a + k) : def;
  };
  OurKeys o;
  o.n_layer = num("block_count", -1);
  o.hd_s = num("attention.key_length", -1);
  o.hd_g = num("attention.key_length_global", -1);
  o.kv_s = num("attention.head_count_kv", -1);
  o.kv_g = num("attention.head_count_kv_global", o.kv_s);
  o.ff = num("feed_forward_length", -1);
  o.shared = num("attention.shared_kv_layers", 0);
  o.rot_g = num("rope.dimension_count_global", o.hd_g);
  const gguf::Value* dw = ck.meta(a + "feed_forward_double_wide");
  o.double_wide = dw && dw->as_bool(a + "feed_forward_double_wide");
  const std::string pkey = a + "attention.sliding_window_pattern";
  const gguf::Value* pat = ck.meta(pkey);
  if (!pat || pat->type != gguf::ValueType::array || static_cast<int64_t>(pat->arr.size()) != o.n_layer)
    throw Error(path, pkey, "one flag per layer (true: sliding)", std::to_string(o.n_layer) + " booleans", pat ? "another value" : "absent");
  for (int64_t l = 0; l < o.n_layer; ++l) o.sliding.push_back(pat->arr.at(static_cast<size_t>(l), pkey).as_bool(pkey));
  if (o.hd_g < 2 || o.hd_g % 2 != 0 || o.rot_g < 0 || o.rot_g > o.hd_g || o.rot_g % 2 != 0)
    throw Error(path, a + "rope.dimension_count_global", "an even count of rotated dimensions of the global head",
                "0 .. " + std::to_string(o.hd_g), std::to_string(o.rot_g));
  return o;
}

}  // namespace

std::vector<float> gemma4_rope_freqs(const Checkpoint& ck) {
  if (layout_arch(ck) != "gemma4") return {};
  const OurKeys o = our_keys(ck);
  std::vector<float> f(static_cast<size_t>(o.hd_g / 2), 1e30f);
  std::fill_n(f.begin(), o.rot_g / 2, 1.0f);
  return f;
}

std::unique_ptr<Checkpoint> gemma4_to_llamacpp(const Checkpoint& ck, bool stack_experts) {
  if (layout_arch(ck) != "gemma4") return nullptr;
  const std::string a = "gemma4.";
  const std::string& path = ck.info().path;
  const OurKeys o = our_keys(ck);
  auto v = std::make_unique<LayoutView>(ck, nullptr);
  v->alias[a + "attention.sliding_window"] = a + "attention.sliding_window_swa";
  v->hidden.insert(a + "attention.sliding_window_swa");
  v->extra[a + "attention.key_length"] = gguf::u32_value(o.hd_g);
  v->extra[a + "attention.value_length"] = gguf::u32_value(o.hd_g);
  v->extra[a + "attention.key_length_swa"] = gguf::u32_value(o.hd_s);
  v->extra[a + "attention.value_length_swa"] = gguf::u32_value(o.hd_s);
  if (o.kv_g != o.kv_s) {
    std::vector<int64_t> kv;
    for (bool s : o.sliding) kv.push_back(s ? o.kv_s : o.kv_g);
    v->extra[a + "attention.head_count_kv"] = gguf::u32_array_value(kv);
  }
  if (o.double_wide && o.shared > 0) {
    std::vector<int64_t> ff;
    for (int64_t l = 0; l < o.n_layer; ++l) ff.push_back(l < o.n_layer - o.shared ? o.ff : 2 * o.ff);
    v->extra[a + "feed_forward_length"] = gguf::u32_array_value(ff);
  }
  // The global head's dimensions, the rotated ones told by rope_freqs.weight (gemma4_rope_freqs).
  v->extra[a + "rope.dimension_count"] = gguf::u32_value(o.hd_g);
  if (!ck.meta(a + "attention.shared_kv_layers")) v->extra[a + "attention.shared_kv_layers"] = gguf::u32_value(0);
  if (!ck.meta(a + "embedding_length_per_layer_input")) v->extra[a + "embedding_length_per_layer_input"] = gguf::u32_value(0);
  for (const char* k : {"attention.key_length_global", "attention.head_count_kv_global", "attention.k_eq_v", "rope.dimension_count_global",
                        "feed_forward_double_wide"})
    v->hidden.insert(a + k);

  for (const TensorEntry& e : ck.tensors()) {
    int64_t n = 0;
    std::string rest;
    if (!layout_split_layer(e.name, n, rest)) {
      v->add(e.name, layout_plain(e.name));
      continue;
    }
    const std::string b = "blk." + std::to_string(n) + ".";
    std::string stacked;
    int64_t x = 0;
    if (stack_experts && hf::split_expert_name(e.name, stacked, x) && (stacked == b + "ffn_gate_exps.weight" || stacked == b + "ffn_up_exps.weight")) {
      if (stacked != b + "ffn_gate_exps.weight") continue;  // stacked under the gate
      const std::string up = hf::expert_name(b + "ffn_up_exps.weight", x);
      if (!ck.find(up)) throw Error(path, up, "an expert's up projection beside its gate", "present", "absent");
      LayoutSource s = layout_plain(e.name);
      s.then = {up};
      v->add(hf::expert_name(b + "ffn_gate_up_exps.weight", x), std::move(s));
    } else if (hf::split_expert_name(e.name, stacked, x) && stacked == b + "ffn_down_exps.weight" && e.storage == Storage::nvfp4) {
      // NVFP4 down experts: the router's per-expert scale folded into their tensor scale, as
      // llama.cpp's converter does (ffn_down_exps.scale is then that product).
      const std::string r = b + "ffn_gate_exps_scale.weight";
      if (!ck.find(r)) throw Error(path, r, "the router's per-expert scale of an MoE layer", "present", "absent");
      const std::vector<float> scale = ck.to_f32(r);
      if (x < 0 || x >= static_cast<int64_t>(scale.size()))
        throw Error(path, r, "one scale per expert", "more than " + std::to_string(x), std::to_string(scale.size()));
      LayoutSource s = layout_plain(e.name);
      s.scale2_mult = scale[static_cast<size_t>(x)];
      v->add(e.name, std::move(s));
    } else if (rest == "ffn_gate_inp_scale.weight") {
      v->add(b + "ffn_gate_inp.scale", layout_plain(e.name));
    } else if (rest == "ffn_gate_exps_scale.weight") {
      const TensorEntry* d0 = ck.find(b + "ffn_down_exps.0.weight");
      if (!(d0 && d0->storage == Storage::nvfp4)) v->add(b + "ffn_down_exps.scale", layout_plain(e.name));  // else folded
    } else {
      v->add(e.name, layout_plain(e.name));
    }
  }
  return v;
}

std::unique_ptr<Checkpoint> gemma4_from_llamacpp(std::unique_ptr<Checkpoint> ck) {
  const std::string a = "gemma4.";
  if (ck->info().container != "gguf" || layout_arch(*ck) != "gemma4") return ck;
  const Checkpoint& base = *ck;
  const std::string& path = base.info().path;
  auto v = std::make_unique<LayoutView>(base, std::move(ck));
  const auto num = [&](const std::string& k) -> int64_t {
    const gguf::Value* x = base.meta(a + k);
    if (!x) throw Error(path, a + k, "missing metadata of a gemma4 model (llama.cpp's layout)", "present", "absent");
    return x->as_int(a + k);
  };
  const auto has = [&](const std::string& k) { return base.meta(a + k) != nullptr; };
  const int64_t n_layer = num("block_count");
  if (n_layer < 1 || n_layer > (int64_t{1} << 16)) throw Error(path, a + "block_count", "layer count", "1 .. 65536", std::to_string(n_layer));
  const std::string pkey = a + "attention.sliding_window_pattern";
  const gguf::Value* pat = base.meta(pkey);
  if (!pat || pat->type != gguf::ValueType::array || static_cast<int64_t>(pat->arr.size()) != n_layer)
    throw Error(path, pkey, "one flag per layer (true: sliding)", std::to_string(n_layer) + " booleans", pat ? "another value" : "absent");
  std::vector<bool> sliding;
  for (int64_t l = 0; l < n_layer; ++l) sliding.push_back(pat->arr.at(static_cast<size_t>(l), pkey).as_bool(pkey));
  const int64_t shared = has("attention.shared_kv_layers") ? num("attention.shared_kv_layers") : 0;
  if (shared < 0 || shared >= n_layer)
    throw Error(path, a + "attention.shared_kv_layers", "KV-shared layers", "0 .. " + std::to_string(n_layer - 1), std::to_string(shared));
  const int64_t first_shared = n_layer - shared;

  // No per-layer embeddings: llama.cpp writes 0, ours leaves the key out.
  if (has("embedding_length_per_layer_input") && num("embedding_length_per_layer_input") == 0) v->hidden.insert(a + "embedding_length_per_layer_input");
  // The window of the sliding layers (ours does not bound the context with it).
  v->alias[a + "attention.sliding_window_swa"] = a + "attention.sliding_window";
  v->hidden.insert(a + "attention.sliding_window");
  // Head sizes: llama.cpp's plain keys are the global layers', _swa the sliding ones'.
  const int64_t hd_g = num("attention.key_length");
  const int64_t hd_s = has("attention.key_length_swa") ? num("attention.key_length_swa") : hd_g;
  if (has("attention.value_length") && num("attention.value_length") != hd_g)
    throw Error(path, a + "attention.value_length", "the global layers' value size: their key size (attention.key_length)", std::to_string(hd_g),
                std::to_string(num("attention.value_length")));
  if (has("attention.value_length_swa") && num("attention.value_length_swa") != hd_s)
    throw Error(path, a + "attention.value_length_swa", "the sliding layers' value size: their key size", std::to_string(hd_s),
                std::to_string(num("attention.value_length_swa")));
  v->extra[a + "attention.key_length"] = gguf::u32_value(hd_s);
  v->extra[a + "attention.value_length"] = gguf::u32_value(hd_s);
  v->extra[a + "attention.key_length_global"] = gguf::u32_value(hd_g);
  for (const char* k : {"attention.key_length_swa", "attention.value_length_swa"}) v->hidden.insert(a + k);
  // KV heads per layer type.
  const std::string kvkey = a + "attention.head_count_kv";
  v->extra[kvkey] = gguf::u32_value(value_on(base, kvkey, n_layer, [&](int64_t l) { return sliding[static_cast<size_t>(l)]; }, "sliding"));
  v->extra[a + "attention.head_count_kv_global"] =
      gguf::u32_value(value_on(base, kvkey, n_layer, [&](int64_t l) { return !sliding[static_cast<size_t>(l)]; }, "global"));
  // The MLP's width, twice as wide on the KV-shared layers where the array says so.
  const std::string ffkey = a + "feed_forward_length";
  const int64_t ff = value_on(base, ffkey, n_layer, [&](int64_t l) { return l < first_shared; }, "not KV-shared");
  const int64_t ff_shared = shared > 0 ? value_on(base, ffkey, n_layer, [&](int64_t l) { return l >= first_shared; }, "KV-shared") : ff;
  if (ff_shared != ff && ff_shared != 2 * ff)
    throw Error(path, ffkey, "the KV-shared layers' MLP as wide as the others or twice (use_double_wide_mlp)",
                std::to_string(ff) + " or " + std::to_string(2 * ff), std::to_string(ff_shared));
  v->extra[ffkey] = gguf::u32_value(ff);
  if (shared > 0) v->extra[a + "feed_forward_double_wide"] = gguf::bool_value(ff_shared == 2 * ff);
  // RoPE: the sliding layers rotate rope.dimension_count_swa dimensions; the global ones the pairs
  // whose rope_freqs factor is 1 (1e30: not rotated), else rope.dimension_count.
  int64_t rot_g = has("rope.dimension_count") ? num("rope.dimension_count") : hd_g;
  if (const TensorEntry* rf = base.find("rope_freqs.weight")) {
    const std::vector<float> f = base.to_f32(rf->name);
    if (static_cast<int64_t>(f.size()) != hd_g / 2)
      throw Error(path, rf->name, "one factor per pair of the global head", std::to_string(hd_g / 2), std::to_string(f.size()));
    int64_t n = 0;
    while (n < static_cast<int64_t>(f.size()) && f[static_cast<size_t>(n)] == 1.0f) ++n;
    for (int64_t i = n; i < static_cast<int64_t>(f.size()); ++i)
      if (!(f[static_cast<size_t>(i)] >= 1e20f))
        throw Error(path, rf->name, "proportional RoPE: factor 1 on the first pairs, about 1e30 (not rotated) on the rest", ">= 1e20 at pair " + std::to_string(i),
                    std::to_string(f[static_cast<size_t>(i)]));
    rot_g = 2 * n;
  }
  v->extra[a + "rope.dimension_count_global"] = gguf::u32_value(rot_g);
  v->hidden.insert(a + "rope.dimension_count");
  // K = V on the global layers that compute their own keys: none of them has attn_v.
  int with_v = 0, without_v = 0;
  for (int64_t l = 0; l < first_shared; ++l)
    if (!sliding[static_cast<size_t>(l)]) ++(base.find("blk." + std::to_string(l) + ".attn_v.weight") ? with_v : without_v);
  if (with_v > 0 && without_v > 0)
    throw Error(path, "attn_v.weight", "every global layer with a v projection, or none (K = V)", "all or none",
                std::to_string(with_v) + " of " + std::to_string(with_v + without_v));
  v->extra[a + "attention.k_eq_v"] = gguf::bool_value(without_v > 0);

  const int64_t ff_e = has("expert_feed_forward_length") ? num("expert_feed_forward_length") : 0;
  for (const TensorEntry& e : base.tensors()) {
    if (e.name == "rope_freqs.weight") continue;  // read above
    int64_t n = 0;
    std::string rest;
    if (!layout_split_layer(e.name, n, rest)) {
      v->add(e.name, layout_plain(e.name));
      continue;
    }
    const std::string b = "blk." + std::to_string(n) + ".";
    std::string stacked;
    int64_t x = 0;
    if (hf::split_expert_name(e.name, stacked, x) && stacked == b + "ffn_gate_up_exps.weight") {
      if (ff_e < 1) throw Error(path, a + "expert_feed_forward_length", "the experts' width (stacked gate and up)", "present", "absent");
      std::vector<int64_t> gate, up;
      for (int64_t r = 0; r < ff_e; ++r) {
        gate.push_back(r);
        up.push_back(ff_e + r);
      }
      v->add(hf::expert_name(b + "ffn_gate_exps.weight", x), layout_rows(e.name, gate));
      v->add(hf::expert_name(b + "ffn_up_exps.weight", x), layout_rows(e.name, up));
    } else if (rest == "ffn_gate_inp.scale") {
      v->add(b + "ffn_gate_inp_scale.weight", layout_plain(e.name));
    } else if (rest == "ffn_down_exps.scale") {
      v->add(b + "ffn_gate_exps_scale.weight", layout_plain(e.name));
    } else {
      v->add(e.name, layout_plain(e.name));
    }
  }
  // NVFP4 down experts: blk.N.ffn_down_exps.scale is their tensor scale with the router's
  // per-expert scale folded in (llama.cpp's converter multiplies weight_scale_2 by it; the GGUF
  // reader took it for the tensor scale), so the per-expert scale is 1 here.
  const int64_t n_expert = has("expert_count") ? num("expert_count") : 0;
  for (int64_t l = 0; l < n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const TensorEntry* d0 = base.find(b + "ffn_down_exps.0.weight");
    if (d0 && d0->storage == Storage::nvfp4 && !v->find(b + "ffn_gate_exps_scale.weight")) {
      if (n_expert < 1) throw Error(path, a + "expert_count", "the experts' count of an MoE layer", ">= 1", std::to_string(n_expert));
      v->add_constant(b + "ffn_gate_exps_scale.weight", std::vector<float>(static_cast<size_t>(n_expert), 1.0f));
    }
  }
  return v;
}

}  // namespace nvfp4

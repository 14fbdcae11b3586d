// Model::load: configuration from GGUF-style metadata, every tensor checked for presence and
// shape, linear layers prepared for their kernels, refusals before any inference.
#include <cmath>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <set>

#include "nvfp4/arch.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/huge_pages.h"
#include "nvfp4/quantize.h"
#include "models/families.h"
#include "ops/model_impl.h"

namespace nvfp4 {

namespace {

struct Loader {
  const Checkpoint& ck;
  const LoadOptions& opt;
  const std::string& path;
  mutable std::set<std::string> used;  // every tensor the model reads: the rest is refused
  // The packed weight streams, on huge pages shared by the small layers (nvfp4/huge_pages.h).
  std::shared_ptr<HugeArena> arena = std::make_shared<HugeArena>();

  const gguf::Value& meta(const std::string& key) const {
    const gguf::Value* v = ck.meta(key);
    if (!v) throw Error(path, "", "missing metadata '" + key + "'", "present", "absent");
    return *v;
  }
  int64_t meta_int(const std::string& key) const {
    const int64_t v = meta(key).as_int(key);
    if (v <= 0 || v > (int64_t{1} << 31)) throw Error(path, "", "metadata '" + key + "'", "1 .. 2^31", std::to_string(v));
    return v;
  }
  double meta_float(const std::string& key, double def) const {
    const gguf::Value* v = ck.meta(key);
    if (!v) return def;
    const double d = v->as_float(key);
    if (!std::isfinite(d) || d <= 0) throw Error(path, "", "metadata '" + key + "'", "finite and > 0", std::to_string(d));
    return d;
  }

  // Whether an optional tensor (decided on layer 0, then required of every layer) is there;
  // a required one must be.
  bool wanted(const std::string& name, Need need) const {
    const bool present = ck.find(name) != nullptr;
    if (need == Need::required && !present) throw Error(path, name, "missing tensor", "present", "absent");
    if (need == Need::none && present)
      throw Error(path, name, "tensor the architecture does not use", "absent", "present");
    return present;
  }

  RopeConfig rope(const std::string& a, int64_t head_dim) const {
    RopeConfig r;
    r.theta = meta_float(a + "rope.freq_base", 10000.0);
    std::string type = "none";
    if (const gguf::Value* s = ck.meta(a + "rope.scaling.type")) type = s->as_string(a + "rope.scaling.type");
    if (type == "linear") {
      r.linear_factor = meta_float(a + "rope.scaling.factor", 1.0);
    } else if (type == "llama3") {  // from an HF config.json (GGUF files carry rope_freqs.weight)
      const auto need = [&](const std::string& k) {
        if (!ck.meta(a + k)) throw Error(path, "", "missing metadata '" + a + k + "' (llama3 rope scaling)", "present", "absent");
        return meta_float(a + k, 1.0);
      };
      r.freq_factors = rope_freq_factors_llama3(head_dim, r.theta, need("rope.scaling.factor"), need("rope.scaling.low_freq_factor"),
                                                need("rope.scaling.high_freq_factor"),
                                                need("rope.scaling.original_context_length"));
    } else if (type != "none") {
      throw Error(path, "", "RoPE scaling type (" + a + "rope.scaling.type)", "none, linear or llama3", type);
    }
    if (const TensorEntry* f = ck.find("rope_freqs.weight")) {
      if (!r.freq_factors.empty())
        throw Error(path, "rope_freqs.weight", "two rope scalings (metadata llama3 and a rope_freqs tensor)", "one", "both");
      r.freq_factors = vec("rope_freqs.weight", head_dim / 2);
      for (float v : r.freq_factors)
        if (!std::isfinite(v) || v <= 0) throw Error(path, f->name, "rope frequency factor", "finite and > 0", std::to_string(v));
    }
    return r;
  }

  const TensorEntry& shaped(const std::string& name, std::vector<int64_t> shape) const {
    const TensorEntry* e = ck.find(name);
    if (!e) throw Error(path, name, "missing tensor", "present", "absent");
    used.insert(name);
    if (e->shape != shape) {
      auto str = [](const std::vector<int64_t>& s) {
        std::string o = "[";
        for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
        return o + "]";
      };
      throw Error(path, name, "tensor shape", str(shape), str(e->shape));
    }
    return *e;
  }

  std::vector<float> vec(const std::string& name, int64_t n) const {
    shaped(name, {n});
    std::vector<float> v = ck.to_f32(name);
    ck.release(name);
    return v;
  }

  MatMul linear(const std::string& base, int64_t n_out, int64_t n_in) const {
    MatMul m = linear_copy(base, n_out, n_in);
    ck.release(base + ".weight");  // copied into the kernels' layout: the mapped bytes can go
    return m;
  }

  MatMul linear_copy(const std::string& base, int64_t n_out, int64_t n_in) const {
    const std::string name = base + ".weight";
    const TensorEntry& e = shaped(name, {n_out, n_in});
    MatMul m;
    m.name = base;
    m.n_out = n_out;
    m.n_in = n_in;
    if (e.storage == Storage::nvfp4) {
      const RowMatrix w = ck.nvfp4(name);
      m.pre_scale = ck.pre_quant_scale(name);  // NVFP4_AWQ (the reader checked its length)
      m.nvfp4 = true;
      m.lin = Linear::prepare(w.view(), e.input_scale, base, arena);
      m.bytes = w.codes.size() + w.scales.size() + 4;
      return m;
    }
    std::vector<float> w = ck.to_f32(name);
    if (opt.quantize) {
      const RowMatrix q = quantize(w.data(), n_out, n_in, name);
      auto it = opt.input_scales.find(base);
      m.nvfp4 = true;
      m.lin = Linear::prepare(q.view(), it == opt.input_scales.end() ? 0.0f : it->second, base, arena);
      m.bytes = q.codes.size() + q.scales.size() + 4;
      return m;
    }
    m.bytes = w.size() * 4;
    if (opt.pinned_float) {
      m.use_pinned = true;
      m.pinned = PinnedDense::from_f32(std::move(w), n_out, n_in);
      return m;
    }
    m.dense = DenseLinear::prepare(DType::f32, w.data(), n_out, n_in);
    return m;
  }

  // The embedding or the head: Q8_0 (convert --head q8) and NVFP4 (--head nvfp4) as stored when the
  // checkpoint is served as it is; otherwise the float path of dense().
  Head head_tensor(const std::string& name, int64_t n_out, int64_t n_in, bool forward, bool rows) const {
    const TensorEntry& e = shaped(name, {n_out, n_in});
    uint32_t type = 0;
    const void* data = nullptr;
    if (!opt.quantize && ck.raw_ggml(name, type, data) && type == ggml::Q8_0) {
      const bool integer = opt.mode == Mode::a16q8 || opt.mode == Mode::w4a4;
      Head h = Head::q8_0(static_cast<const uint8_t*>(data), n_out, n_in, integer);
      ck.release(name);
      return h;
    }
    if (e.storage == Storage::nvfp4) {
      Head h = Head::nvfp4(ck.nvfp4(name), e.input_scale, name.substr(0, name.size() - 7), forward, rows);
      ck.release(name);
      return h;
    }
    return Head::dense(dense(name, n_out, n_in));
  }

  PinnedDense dense(const std::string& name, int64_t n_out, int64_t n_in) const {
    PinnedDense d = dense_copy(name, n_out, n_in);
    ck.release(name);
    return d;
  }

  PinnedDense dense_copy(const std::string& name, int64_t n_out, int64_t n_in) const {
    shaped(name, {n_out, n_in});
    DType dt;
    const void* data = nullptr;
    if (ck.raw_float(name, dt, data)) return PinnedDense::prepare(dt, data, n_out, n_in);
    std::vector<float> w = ck.to_f32(name);
    if (opt.quantize) {  // as `nvfp4 convert` keeps ggml-quantized embeddings: F16
      std::vector<uint16_t> h(w.size());
      for (size_t i = 0; i < w.size(); ++i) h[i] = float_to_half(w[i]);
      return PinnedDense::prepare(DType::f16, h.data(), n_out, n_in);
    }
    return PinnedDense::from_f32(std::move(w), n_out, n_in);
  }
};

// Expert counts and sizes under llama.cpp's keys (hf_config.cpp writes the same for HF).
void load_moe_config(const Loader& L, const std::string& a, ModelConfig& c) {
  const ArchInfo& info = *c.info;
  c.n_expert = L.meta_int(a + "expert_count");
  c.n_expert_used = L.meta_int(a + "expert_used_count");
  if (c.n_expert_used > c.n_expert)
    throw Error(L.path, "", "metadata '" + a + "expert_used_count'", "<= expert_count " + std::to_string(c.n_expert),
                std::to_string(c.n_expert_used));
  // Qwen's expert size is expert_feed_forward_length; Mixtral's and OLMoE's, feed_forward_length.
  c.n_ff_exp = L.ck.meta(a + "expert_feed_forward_length") ? L.meta_int(a + "expert_feed_forward_length")
                                                           : L.meta_int(a + "feed_forward_length");
  c.n_ff = c.n_ff_exp;
  if (info.shared_expert != Need::none && L.ck.meta(a + "expert_shared_feed_forward_length"))
    c.n_ff_shexp = L.meta_int(a + "expert_shared_feed_forward_length");
  if (info.shared_expert == Need::required && c.n_ff_shexp == 0)
    throw Error(L.path, "", "missing metadata '" + a + "expert_shared_feed_forward_length' (" + c.arch + " has a shared expert)",
                "present", "absent");
  c.gating = info.gating;
  c.norm_topk = info.norm_topk_default;
  if (const gguf::Value* v = L.ck.meta(a + "expert_weights_norm")) c.norm_topk = v->as_bool();
  if (c.gating == MoeGating::softmax_topk) c.norm_topk = false;  // the k weights already sum to 1
}

void load_moe_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  w.router = L.dense(b + "ffn_gate_inp.weight", c.n_expert, c.n_embd);
  for (int64_t x = 0; x < c.n_expert; ++x) {
    const auto name = [&](std::string_view kind) {  // blk.N.ffn_gate_exps.E
      std::string s = b;
      s.append(kind).append(".").append(std::to_string(x));
      return s;
    };
    Expert ex;
    ex.gate = L.linear(name("ffn_gate_exps"), c.n_ff_exp, c.n_embd);
    ex.up = L.linear(name("ffn_up_exps"), c.n_ff_exp, c.n_embd);
    ex.down = L.linear(name("ffn_down_exps"), c.n_embd, c.n_ff_exp);
    for (const MatMul* mm : {&ex.gate, &ex.up, &ex.down})
      if (!mm->pre_scale.empty())
        throw Error(L.path, mm->name + ".weight", "NVFP4_AWQ pre_quant_scale on a routed expert is not supported",
                    "no pre_quant_scale on experts", "a pre_quant_scale of " + std::to_string(mm->pre_scale.size()) + " values");
    w.experts.push_back(std::move(ex));
  }
  if (c.n_ff_shexp > 0) {
    w.sh_gate = L.linear(b + "ffn_gate_shexp", c.n_ff_shexp, c.n_embd);
    w.sh_up = L.linear(b + "ffn_up_shexp", c.n_ff_shexp, c.n_embd);
    w.sh_down = L.linear(b + "ffn_down_shexp", c.n_embd, c.n_ff_shexp);
    // llama.cpp stores the shared expert's gate as a vector [n_embd], HF as a matrix [1, n_embd].
    const std::string g = b + "ffn_gate_inp_shexp.weight";
    const TensorEntry* e = L.ck.find(g);
    if (e && e->shape.size() == 1) {
      const std::vector<float> v = L.vec(g, c.n_embd);
      w.sh_gate_inp = PinnedDense::from_f32(v, 1, c.n_embd);
    } else {
      w.sh_gate_inp = L.dense(g, 1, c.n_embd);
    }
  }
}

}  // namespace

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::load(const Checkpoint& ck, const LoadOptions& opt) {
  const std::string& path = ck.info().path;
  Loader L{ck, opt, path, {}, std::make_shared<HugeArena>()};
  std::unique_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  m.source = path;
  m.mode = opt.mode;
  ModelConfig& c = m.cfg;
  const std::string gguf_arch = L.meta("general.architecture").as_string("general.architecture");
  const std::string a = gguf_arch + ".";
  const bool experts = ck.meta(a + "expert_count") != nullptr;
  c.info = find_arch(gguf_arch, experts);
  if (!c.info)
    throw Error(path, "", "unsupported architecture (general.architecture)", arch_names(), gguf_arch);
  c.arch = std::string(c.info->name);
  const Family* family = find_family(c.info->block);
  if (!family)
    throw Error(path, "general.architecture", "a block for the architecture (src/models/families.cpp)", "one of its families",
                "none for '" + std::string(c.info->block) + "'");
  m.block = family->run;
  if (experts && c.info->moe == Need::none)
    throw Error(path, "", "metadata '" + a + "expert_count' for an architecture without experts", "absent (" + c.arch + ")", "present");
  if (!experts && c.info->moe == Need::required)
    throw Error(path, "", "missing metadata '" + a + "expert_count' (" + c.arch + " routes its FFN to experts)", "present", "absent");
  c.n_layer = L.meta_int(a + "block_count");
  c.n_embd = L.meta_int(a + "embedding_length");
  if (experts) load_moe_config(L, a, c);
  else c.n_ff = L.meta_int(a + "feed_forward_length");
  c.n_head = L.meta_int(a + "attention.head_count");
  c.n_head_kv = ck.meta(a + "attention.head_count_kv") ? L.meta_int(a + "attention.head_count_kv") : c.n_head;
  c.n_ctx_train = ck.meta(a + "context_length") ? L.meta_int(a + "context_length") : 2048;
  c.rms_eps = static_cast<float>(L.meta_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  if (c.n_head % c.n_head_kv != 0)
    throw Error(path, "", "attention heads", "n_head % n_head_kv == 0",
                std::to_string(c.n_head) + " / " + std::to_string(c.n_head_kv));
  // head_dim: attention.key_length when given (Qwen3: 128 with hidden 1024), else n_embd / n_head.
  if (ck.meta(a + "attention.key_length")) {
    c.head_dim = L.meta_int(a + "attention.key_length");
    if (ck.meta(a + "attention.value_length") && L.meta_int(a + "attention.value_length") != c.head_dim)
      throw Error(path, "", "metadata '" + a + "attention.value_length'", "equal to key_length " + std::to_string(c.head_dim),
                  std::to_string(L.meta_int(a + "attention.value_length")));
  } else {
    if (c.n_embd % c.n_head != 0)
      throw Error(path, "", "attention heads", "n_embd % n_head == 0 (or attention.key_length given)",
                  std::to_string(c.n_embd) + " / " + std::to_string(c.n_head));
    c.head_dim = c.n_embd / c.n_head;
  }
  const int64_t rope_dim = ck.meta(a + "rope.dimension_count") ? L.meta_int(a + "rope.dimension_count") : c.head_dim;
  if (rope_dim != c.head_dim || c.head_dim % 2 != 0)
    throw Error(path, "", "RoPE dimension (partial rotary is not supported)",
                "equal to the (even) head dimension " + std::to_string(c.head_dim), std::to_string(rope_dim));
  c.rope = L.rope(a, c.head_dim);
  c.rope.style = c.info->rope;
  if (ck.meta(a + "attention.sliding_window")) c.sliding_window = L.meta_int(a + "attention.sliding_window");
  const TensorEntry* emb = ck.find("token_embd.weight");
  if (!emb || emb->shape.size() != 2 || emb->shape[1] != c.n_embd)
    throw Error(path, "token_embd.weight", "missing or misshapen embedding", "[n_vocab, " + std::to_string(c.n_embd) + "]",
                emb ? "another shape" : "absent");
  c.n_vocab = emb->shape[0];

  c.tied_head = ck.find("output.weight") == nullptr;
  m.embd = L.head_tensor("token_embd.weight", c.n_vocab, c.n_embd, c.tied_head, true);
  if (const gguf::Value* t = ck.meta("nvfp4.hf.tie_word_embeddings"); t && !t->as_bool() && c.tied_head)
    throw Error(path, "output.weight", "missing tensor (config.json tie_word_embeddings is false)", "lm_head.weight", "absent");
  if (!c.tied_head) m.head_own = L.head_tensor("output.weight", c.n_vocab, c.n_embd, true, false);
  m.output_norm = L.vec("output_norm.weight", c.n_embd);
  const ArchInfo& info = *c.info;
  const std::string b0 = "blk.0.";
  c.qkv_bias = L.wanted(b0 + "attn_q.bias", info.qkv_bias);
  c.o_bias = L.wanted(b0 + "attn_output.bias", info.o_bias);
  c.qk_norm = L.wanted(b0 + "attn_q_norm.weight", info.qk_norm);
  c.qk_norm_span = info.qk_norm_span;
  const int64_t qd = c.q_dim(), kv = c.kv_dim();
  const bool full_qk = c.qk_norm_span == QkNormSpan::full;
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    LayerWeights w;
    w.mixer = MixerKind::attention;
    w.ffn = c.n_expert > 0 ? FfnKind::moe : FfnKind::dense;
    w.attn_norm = L.vec(b + "attn_norm.weight", c.n_embd);
    w.ffn_norm = L.vec(b + "ffn_norm.weight", c.n_embd);
    if (c.n_expert > 0) load_moe_layer(L, b, c, w);
    w.q = L.linear(b + "attn_q", qd, c.n_embd);
    w.k = L.linear(b + "attn_k", kv, c.n_embd);
    w.v = L.linear(b + "attn_v", kv, c.n_embd);
    w.o = L.linear(b + "attn_output", c.n_embd, qd);
    if (c.n_expert == 0) {
      w.gate = L.linear(b + "ffn_gate", c.n_ff, c.n_embd);
      w.up = L.linear(b + "ffn_up", c.n_ff, c.n_embd);
      w.down = L.linear(b + "ffn_down", c.n_embd, c.n_ff);
    }
    if (c.qkv_bias) {
      w.q.bias = L.vec(b + "attn_q.bias", qd);
      w.k.bias = L.vec(b + "attn_k.bias", kv);
      w.v.bias = L.vec(b + "attn_v.bias", kv);
    }
    if (c.o_bias) w.o.bias = L.vec(b + "attn_output.bias", c.n_embd);
    if (c.qk_norm) {
      w.q_norm = L.vec(b + "attn_q_norm.weight", full_qk ? qd : c.head_dim);
      w.k_norm = L.vec(b + "attn_k_norm.weight", full_qk ? kv : c.head_dim);
    }
    if (opt.mode == Mode::w4a4)
      for (const MatMul* mm : w.matmuls())
        if (mm->nvfp4 && !mm->lin.has_input_scale())
          throw Error(path, mm->name + ".weight", "mode w4a4 needs an activation scale (input_scale) for every NVFP4 layer",
                      "an input scale (a W4A4 checkpoint, or calibrated scales)", "none");
    m.layers.push_back(std::move(w));
  }
  // A tensor the model does not read is an error, not silently ignored: a misnamed expert or a
  // layer this runtime does not know would otherwise change nothing but the results.
  for (const TensorEntry& e : ck.tensors())
    if (!L.used.count(e.name))
      throw Error(path, e.name, "tensor the " + c.arch + " model does not use (neither mapped nor excluded)", "absent", "present");
  // Every tensor is copied or read: the pages its neighbours shared with it leave too.
  ck.release_all();
#if defined(__GLIBC__)
  // The load's transient copies (each tensor's rows before packing) leave freed heap that glibc
  // keeps (its mmap threshold rises to their size); hand those pages back, or they sit beside the
  // weights in the resident set.
  malloc_trim(0);
#endif
  return model;
}

const ModelConfig& Model::config() const { return impl_->cfg; }
Mode Model::mode() const { return impl_->mode; }

size_t Model::weight_bytes() const {
  const Impl& m = *impl_;
  size_t b = m.embd.bytes() + (m.cfg.tied_head ? 0 : m.head_own.bytes()) + m.output_norm.size() * 4;
  for (const auto& l : m.layers) {
    b += (l.attn_norm.size() + l.ffn_norm.size() + l.q_norm.size() + l.k_norm.size()) * 4;
    b += l.router.bytes() + l.sh_gate_inp.bytes();
    for (const MatMul* mm : l.matmuls()) b += mm->bytes + mm->bias.size() * 4;
  }
  return b;
}

size_t Model::bytes_per_token() const {
  // Everything but the embedding table is read once per token; of the embedding, one row (unless
  // it is the tied head, which is read in full).
  // Of the routed experts, the n_expert_used a token selects (their average size).
  const Impl& m = *impl_;
  size_t b = weight_bytes();
  if (!m.cfg.tied_head) b -= m.embd.bytes() - m.embd.bytes() / static_cast<size_t>(m.cfg.n_vocab);
  for (const auto& l : m.layers) {
    if (l.experts.empty()) continue;
    size_t all = 0;
    for (const Expert& e : l.experts) all += e.gate.bytes + e.up.bytes + e.down.bytes;
    b -= all - all / l.experts.size() * static_cast<size_t>(m.cfg.n_expert_used);
  }
  return b;
}

std::vector<std::string> Model::describe() const {
  const Impl& m = *impl_;
  std::vector<std::string> out;
  const ModelConfig& c = m.cfg;
  out.push_back("model: " + c.arch + ", " + std::to_string(c.n_layer) + " layers, hidden " +
                std::to_string(c.n_embd) + ", heads " + std::to_string(c.n_head) + "/" +
                std::to_string(c.n_head_kv) + " of " + std::to_string(c.head_dim) + ", mlp " +
                std::to_string(c.n_ff) + ", vocab " + std::to_string(c.n_vocab) +
                (c.tied_head ? ", tied head" : ", own head") + (c.qkv_bias ? ", q/k/v bias" : "") +
                (c.qk_norm ? (c.qk_norm_span == QkNormSpan::full ? ", q/k norm (full width)" : ", q/k norm") : "") +
                (c.n_expert > 0 ? ", " + std::to_string(c.n_expert) + " experts of " + std::to_string(c.n_ff_exp) + " (" +
                                      std::to_string(c.n_expert_used) + " per token" +
                                      (c.gating == MoeGating::softmax_topk ? ", softmax over the selected"
                                                                           : c.norm_topk ? ", renormalised" : "") +
                                      (c.n_ff_shexp > 0 ? ", shared expert of " + std::to_string(c.n_ff_shexp) : "") + ")"
                                : "") +
                ", RoPE " + (c.rope.style == RopeStyle::neox ? "NeoX" : "adjacent pairs") +
                (c.rope.freq_factors.empty() ? "" : " with frequency factors") +
                (c.rope.linear_factor != 1.0 ? " linear x" + std::to_string(c.rope.linear_factor) : ""));
  int nv = 0, nf = 0;
  for (const auto& l : m.layers)
    for (const MatMul* mm : l.matmuls()) (mm->nvfp4 ? nv : nf)++;
  // The first layer of each storage, wherever it is: a mixed checkpoint may hold NVFP4 only in its
  // MLPs or experts (FP8 attention beside NVFP4 MLPs, as NVIDIA ships them).
  const MatMul* any_nvfp4 = nullptr;
  const MatMul* any_float = nullptr;
  for (const auto& l : m.layers)
    for (const MatMul* mm : l.matmuls()) {
      if (mm->nvfp4 && !any_nvfp4) any_nvfp4 = mm;
      if (!mm->nvfp4 && !any_float) any_float = mm;
    }
  std::string lin = "linear layers: " + std::to_string(nv) + " NVFP4, " + std::to_string(nf) + " float (f32)";
  if (any_nvfp4)
    lin += "; NVFP4 mode " + std::string(mode_name(m.mode)) + ", kernels " + any_nvfp4->kernel(m.mode, 1) +
           " (1 token), " + any_nvfp4->kernel(m.mode, 64) + " (64 tokens)";
  if (any_float) lin += "; float kernel " + any_float->kernel(m.mode, 1);
  out.push_back(lin);
  out.push_back("head: " + m.head().type_name() + ", kernel " + m.head().kernel_name(m.mode) + "; embedding " +
                m.embd.type_name());
  out.push_back("weights: " + std::to_string(weight_bytes() / (1024 * 1024)) + " MiB as held, " +
                std::to_string(bytes_per_token() / (1024 * 1024)) + " MiB read per token; " +
                std::to_string(huge_resident_process() / (1024 * 1024)) + " MiB of the process on 2 MiB pages (transparent huge pages: " +
                (thp_mode().empty() ? std::string("absent") : thp_mode()) + ")");
  return out;
}

}  // namespace nvfp4

// Model::load: configuration from GGUF-style metadata, every tensor checked for presence and
// shape, linear layers prepared for their kernels, refusals before any inference.
#include <cmath>

#include "nvfp4/arch.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/quantize.h"
#include "runtime/model_impl.h"

namespace nvfp4 {

namespace {

struct Loader {
  const Checkpoint& ck;
  const LoadOptions& opt;
  const std::string& path;

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
    return ck.to_f32(name);
  }

  MatMul linear(const std::string& base, int64_t n_out, int64_t n_in) const {
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
      m.lin = Linear::prepare(w.view(), e.input_scale, base);
      m.bytes = w.codes.size() + w.scales.size() + 4;
      return m;
    }
    std::vector<float> w = ck.to_f32(name);
    if (opt.quantize) {
      const RowMatrix q = quantize(w.data(), n_out, n_in, name);
      auto it = opt.input_scales.find(base);
      m.nvfp4 = true;
      m.lin = Linear::prepare(q.view(), it == opt.input_scales.end() ? 0.0f : it->second, base);
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

  PinnedDense dense(const std::string& name, int64_t n_out, int64_t n_in) const {
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

}  // namespace

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::load(const Checkpoint& ck, const LoadOptions& opt) {
  const std::string& path = ck.info().path;
  Loader L{ck, opt, path};
  std::unique_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  m.source = path;
  m.mode = opt.mode;
  ModelConfig& c = m.cfg;
  const std::string gguf_arch = L.meta("general.architecture").as_string("general.architecture");
  c.info = find_arch(gguf_arch);
  if (!c.info)
    throw Error(path, "", "unsupported architecture (general.architecture)", arch_names(), gguf_arch);
  c.arch = std::string(c.info->name);
  const std::string a = gguf_arch + ".";
  c.n_layer = L.meta_int(a + "block_count");
  c.n_embd = L.meta_int(a + "embedding_length");
  c.n_ff = L.meta_int(a + "feed_forward_length");
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

  m.embd = L.dense("token_embd.weight", c.n_vocab, c.n_embd);
  c.tied_head = ck.find("output.weight") == nullptr;
  if (const gguf::Value* t = ck.meta("nvfp4.hf.tie_word_embeddings"); t && !t->as_bool() && c.tied_head)
    throw Error(path, "output.weight", "missing tensor (config.json tie_word_embeddings is false)", "lm_head.weight", "absent");
  if (!c.tied_head) m.head_own = L.dense("output.weight", c.n_vocab, c.n_embd);
  m.output_norm = L.vec("output_norm.weight", c.n_embd);
  const ArchInfo& info = *c.info;
  const std::string b0 = "blk.0.";
  c.qkv_bias = L.wanted(b0 + "attn_q.bias", info.qkv_bias);
  c.o_bias = L.wanted(b0 + "attn_output.bias", info.o_bias);
  c.qk_norm = L.wanted(b0 + "attn_q_norm.weight", info.qk_norm);
  const int64_t qd = c.q_dim(), kv = c.kv_dim();
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    LayerWeights w;
    w.attn_norm = L.vec(b + "attn_norm.weight", c.n_embd);
    w.ffn_norm = L.vec(b + "ffn_norm.weight", c.n_embd);
    w.q = L.linear(b + "attn_q", qd, c.n_embd);
    w.k = L.linear(b + "attn_k", kv, c.n_embd);
    w.v = L.linear(b + "attn_v", kv, c.n_embd);
    w.o = L.linear(b + "attn_output", c.n_embd, qd);
    w.gate = L.linear(b + "ffn_gate", c.n_ff, c.n_embd);
    w.up = L.linear(b + "ffn_up", c.n_ff, c.n_embd);
    w.down = L.linear(b + "ffn_down", c.n_embd, c.n_ff);
    if (c.qkv_bias) {
      w.q.bias = L.vec(b + "attn_q.bias", qd);
      w.k.bias = L.vec(b + "attn_k.bias", kv);
      w.v.bias = L.vec(b + "attn_v.bias", kv);
    }
    if (c.o_bias) w.o.bias = L.vec(b + "attn_output.bias", c.n_embd);
    if (c.qk_norm) {
      w.q_norm = L.vec(b + "attn_q_norm.weight", c.head_dim);
      w.k_norm = L.vec(b + "attn_k_norm.weight", c.head_dim);
    }
    if (opt.mode == Mode::w4a4)
      for (const MatMul* mm : {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down})
        if (mm->nvfp4 && !mm->lin.has_input_scale())
          throw Error(path, mm->name + ".weight", "mode w4a4 needs an activation scale (input_scale) for every NVFP4 layer",
                      "an input scale (a W4A4 checkpoint, or calibrated scales)", "none");
    m.layers.push_back(std::move(w));
  }
  return model;
}

const ModelConfig& Model::config() const { return impl_->cfg; }
Mode Model::mode() const { return impl_->mode; }

size_t Model::weight_bytes() const {
  const Impl& m = *impl_;
  size_t b = m.embd.bytes() + (m.cfg.tied_head ? 0 : m.head_own.bytes()) + m.output_norm.size() * 4;
  for (const auto& l : m.layers) {
    b += (l.attn_norm.size() + l.ffn_norm.size() + l.q_norm.size() + l.k_norm.size()) * 4;
    for (const MatMul* mm : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) b += mm->bytes + mm->bias.size() * 4;
  }
  return b;
}

size_t Model::bytes_per_token() const {
  // Everything but the embedding table is read once per token; of the embedding, one row (unless
  // it is the tied head, which is read in full).
  const Impl& m = *impl_;
  size_t b = weight_bytes();
  if (!m.cfg.tied_head) b -= m.embd.bytes() - m.embd.bytes() / static_cast<size_t>(m.cfg.n_vocab);
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
                (c.qk_norm ? ", q/k norm" : "") + ", RoPE " + (c.rope.style == RopeStyle::neox ? "NeoX" : "adjacent pairs") +
                (c.rope.freq_factors.empty() ? "" : " with frequency factors") +
                (c.rope.linear_factor != 1.0 ? " linear x" + std::to_string(c.rope.linear_factor) : ""));
  int nv = 0, nf = 0;
  for (const auto& l : m.layers)
    for (const MatMul* mm : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) (mm->nvfp4 ? nv : nf)++;
  const MatMul& q0 = m.layers.front().q;
  std::string lin = "linear layers: " + std::to_string(nv) + " NVFP4, " + std::to_string(nf) + " float (f32)";
  if (nv > 0) {
    const MatMul* any = nullptr;
    for (const auto& l : m.layers) if (l.q.nvfp4) { any = &l.q; break; }
    lin += "; NVFP4 mode " + std::string(mode_name(m.mode)) + ", kernels " + any->kernel(m.mode, 1) +
           " (1 token), " + any->kernel(m.mode, 64) + " (64 tokens)";
  }
  if (nf > 0) lin += "; float kernel " + q0.kernel(m.mode, 1);
  out.push_back(lin);
  out.push_back(std::string("head: ") + (m.head().is_f16() ? "F16" : "F32") + ", kernel " + m.head().kernel_name() +
                "; embedding " + (m.embd.is_f16() ? "F16" : "F32"));
  out.push_back("weights: " + std::to_string(weight_bytes() / (1024 * 1024)) + " MiB as held, " +
                std::to_string(bytes_per_token() / (1024 * 1024)) + " MiB read per token");
  return out;
}

}  // namespace nvfp4

// Model::load: configuration from GGUF-style metadata, every tensor checked for presence and
// shape, linear layers prepared for their kernels, refusals before any inference.
#include <cmath>

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
      if (!ck.pre_quant_scale(name).empty())
        throw Error(path, name, "NVFP4_AWQ pre_quant_scale is not supported by the runtime yet",
                    "no pre_quant_scale", "a pre_quant_scale");
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
    m.dense = DenseLinear::prepare(DType::f32, w.data(), n_out, n_in);
    m.bytes = w.size() * 4;
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
  c.arch = L.meta("general.architecture").as_string("general.architecture");
  if (c.arch != "llama")
    throw Error(path, "", "unsupported architecture (general.architecture)", "llama", c.arch);
  const std::string a = c.arch + ".";
  if (const gguf::Value* s = ck.meta(a + "rope.scaling.type")) {
    const std::string t = s->as_string(a + "rope.scaling.type");
    if (t != "none") throw Error(path, "", "RoPE scaling is not supported", "none", t);
  }
  c.n_layer = L.meta_int(a + "block_count");
  c.n_embd = L.meta_int(a + "embedding_length");
  c.n_ff = L.meta_int(a + "feed_forward_length");
  c.n_head = L.meta_int(a + "attention.head_count");
  c.n_head_kv = ck.meta(a + "attention.head_count_kv") ? L.meta_int(a + "attention.head_count_kv") : c.n_head;
  c.n_ctx_train = ck.meta(a + "context_length") ? L.meta_int(a + "context_length") : 2048;
  c.rope_theta = L.meta_float(a + "rope.freq_base", 10000.0);
  c.rms_eps = static_cast<float>(L.meta_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  if (c.n_embd % c.n_head != 0 || c.n_head % c.n_head_kv != 0)
    throw Error(path, "", "attention heads", "n_embd % n_head == 0 and n_head % n_head_kv == 0",
                std::to_string(c.n_embd) + " / " + std::to_string(c.n_head) + " / " + std::to_string(c.n_head_kv));
  c.head_dim = c.n_embd / c.n_head;
  c.rope_dim = ck.meta(a + "rope.dimension_count") ? L.meta_int(a + "rope.dimension_count") : c.head_dim;
  if (c.rope_dim != c.head_dim || c.head_dim % 2 != 0)
    throw Error(path, "", "RoPE dimension", "equal to the (even) head dimension " + std::to_string(c.head_dim),
                std::to_string(c.rope_dim));
  const TensorEntry* emb = ck.find("token_embd.weight");
  if (!emb || emb->shape.size() != 2 || emb->shape[1] != c.n_embd)
    throw Error(path, "token_embd.weight", "missing or misshapen embedding", "[n_vocab, " + std::to_string(c.n_embd) + "]",
                emb ? "another shape" : "absent");
  c.n_vocab = emb->shape[0];

  m.embd = L.dense("token_embd.weight", c.n_vocab, c.n_embd);
  c.tied_head = ck.find("output.weight") == nullptr;
  if (!c.tied_head) m.head_own = L.dense("output.weight", c.n_vocab, c.n_embd);
  m.output_norm = L.vec("output_norm.weight", c.n_embd);
  const int64_t kv = c.n_head_kv * c.head_dim;
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    LayerWeights w;
    w.attn_norm = L.vec(b + "attn_norm.weight", c.n_embd);
    w.ffn_norm = L.vec(b + "ffn_norm.weight", c.n_embd);
    w.q = L.linear(b + "attn_q", c.n_embd, c.n_embd);
    w.k = L.linear(b + "attn_k", kv, c.n_embd);
    w.v = L.linear(b + "attn_v", kv, c.n_embd);
    w.o = L.linear(b + "attn_output", c.n_embd, c.n_embd);
    w.gate = L.linear(b + "ffn_gate", c.n_ff, c.n_embd);
    w.up = L.linear(b + "ffn_up", c.n_ff, c.n_embd);
    w.down = L.linear(b + "ffn_down", c.n_embd, c.n_ff);
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
    b += (l.attn_norm.size() + l.ffn_norm.size()) * 4;
    for (const MatMul* mm : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) b += mm->bytes;
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
                (c.tied_head ? ", tied head" : ", own head"));
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

// Model::load: configuration from GGUF-style metadata, every tensor checked for presence and
// shape, linear layers prepared for their kernels, refusals before any inference. The family's
// file (src/models/<family>.cpp) may read its own hyperparameters and layers (families.h).
#include <algorithm>
#include <cstdlib>  // defines __GLIBC__ where there is one
#include <filesystem>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "models/expert_store.h"
#include "models/families.h"
#include "models/gemma4.h"
#include "models/loader.h"

namespace nvfp4 {

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

namespace {
void load_moe_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  w.router = L.dense(b + "ffn_gate_inp.weight", c.n_expert, c.n_embd);
  for (int64_t x = 0; x < c.n_expert; ++x) {
    const auto name = [&](std::string_view kind) {  // blk.N.ffn_gate_exps.E
      std::string s = b;
      s.append(kind).append(".").append(std::to_string(x));
      return s;
    };
    Expert ex;
    ex.gate = L.linear(name("ffn_gate_exps"), c.n_ff_exp, c.n_embd, true);
    ex.up = L.linear(name("ffn_up_exps"), c.n_ff_exp, c.n_embd, true);
    ex.down = L.linear(name("ffn_down_exps"), c.n_embd, c.n_ff_exp, true);
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

void load_attention(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  const int64_t qd = c.q_dim(), kv = c.kv_dim();
  const bool full_qk = c.qk_norm_span == QkNormSpan::full;
  w.q = L.linear(b + "attn_q", c.attn_out_gate ? 2 * qd : qd, c.n_embd);
  w.k = L.linear(b + "attn_k", kv, c.n_embd);
  w.v = L.linear(b + "attn_v", kv, c.n_embd);
  w.o = L.linear(b + "attn_output", c.n_embd, qd);
  if (c.qkv_bias) {
    w.q.bias = L.vec(b + "attn_q.bias", qd);
    w.k.bias = L.vec(b + "attn_k.bias", kv);
    w.v.bias = L.vec(b + "attn_v.bias", kv);
  }
  if (c.o_bias) w.o.bias = L.vec(b + "attn_output.bias", c.n_embd);
  if (c.qk_norm) {
    w.q_norm = L.norm(b + "attn_q_norm.weight", full_qk ? qd : c.head_dim);
    w.k_norm = L.norm(b + "attn_k_norm.weight", full_qk ? kv : c.head_dim);
  }
}

void load_kv_scales(const Loader& L, const ModelConfig& c, int64_t first_block, Model::Impl& m) {
  m.kv_scales.assign(static_cast<size_t>(2 * c.n_layer), 1.0f);
  m.kv_scales_calibrated = false;
  // The scale tensor of layer block's k or v under either producer's name, or null.
  const auto find = [&](int64_t block, bool v) -> const TensorEntry* {
    const std::string n = std::to_string(block);
    for (const std::string& name : {"blk." + n + (v ? ".attn_v.v_scale" : ".attn_k.k_scale"),
                                    "model.layers." + n + (v ? ".self_attn.v_scale" : ".self_attn.k_scale")})
      if (const TensorEntry* e = L.ck.find(name)) return e;
    return nullptr;
  };
  int64_t with = 0, without = -1;  // layers with scales; a layer without them
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const bool own_kv = c.mixer(l) == MixerKind::attention && (c.attn_layers.empty() || c.attn_layers[static_cast<size_t>(l)].kv_from < 0);
    if (!own_kv) continue;
    const TensorEntry* k = find(first_block + l, false);
    const TensorEntry* v = find(first_block + l, true);
    if (!k && !v) {
      if (without < 0) without = l;
      continue;
    }
    for (const TensorEntry* e : {k, v})
      if (!e)
        throw Error(L.path, "blk." + std::to_string(first_block + l) + (k ? ".attn_v.v_scale" : ".attn_k.k_scale"),
                    "an FP8 KV cache scale: a layer with a k scale has a v scale and the reverse", "present", "absent");
    for (int i = 0; i < 2; ++i) {
      const TensorEntry* e = i == 0 ? k : v;
      int64_t n = 1;
      for (const int64_t d : e->shape) n *= d;
      if (n != 1) throw Error(L.path, e->name, "a KV cache scale: one value", "1 element", std::to_string(n));
      L.used.insert(e->name);
      const float x = L.ck.to_f32(e->name)[0];
      if (!(std::isfinite(x) && x > 0.0f)) throw Error(L.path, e->name, "a KV cache scale", "finite and > 0", std::to_string(x));
      m.kv_scales[static_cast<size_t>(2 * l + i)] = x;
    }
    ++with;
  }
  if (with > 0 && without >= 0)
    throw Error(L.path, "blk." + std::to_string(first_block + without) + ".attn_k.k_scale",
                "FP8 KV cache scales: every attention layer has them or none does", "present (as on " + std::to_string(with) + " other layers)",
                "absent");
  m.kv_scales_calibrated = with > 0;
}

void load_ffn(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  if (c.n_expert > 0) {
    load_moe_layer(L, b, c, w);
    return;
  }
  w.gate = L.linear(b + "ffn_gate", c.n_ff, c.n_embd);
  w.up = L.linear(b + "ffn_up", c.n_ff, c.n_embd);
  w.down = L.linear(b + "ffn_down", c.n_embd, c.n_ff);
}

// A layer of the Llama-like families: norms, (experts), attention, (dense FFN), in the order
// they have always been read.
void load_default_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  w.attn_norm = L.norm(b + "attn_norm.weight", c.n_embd);
  w.ffn_norm = L.norm(b + "ffn_norm.weight", c.n_embd);
  if (c.n_expert > 0) load_moe_layer(L, b, c, w);
  load_attention(L, b, c, w);
  if (c.n_expert == 0) load_ffn(L, b, c, w);
}

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

// Refusals name tensors and keys as the checkpoint's own files do (an HF directory: its tensor
// names and config.json's keys), not by the canonical GGUF names the loader reads them under.
std::unique_ptr<Model> Model::load(const Checkpoint& ck, const LoadOptions& opt) {
  try {
    return build(ck, opt, false);
  } catch (const Error& e) {
    throw ck.in_own_names(e);
  }
}

void Model::check(const Checkpoint& ck, const LoadOptions& opt) {
  LoadOptions o = opt;
  o.mtp = false;
  try {
    build(ck, o, true);
  } catch (const Error& e) {
    throw ck.in_own_names(e);
  }
}

std::unique_ptr<Model> Model::build(const Checkpoint& ck, const LoadOptions& opt, bool check_only) {
  const std::string& path = ck.info().path;
  Loader L{ck, opt, path, {}, std::make_shared<HugeArena>()};
  L.check_only = check_only;
  std::unique_ptr<ThreadPool> pack_pool;
  if (opt.threads > 1 && !check_only) {
    pack_pool = std::make_unique<ThreadPool>(opt.threads);
    L.pool = pack_pool.get();
  }
  std::unique_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  m.source = path;
  m.mode = opt.mode;
  ModelConfig& c = m.cfg;
  const std::string gguf_arch = L.meta("general.architecture").as_string("general.architecture");
  const std::string a = gguf_arch + ".";
  const bool experts = ck.meta(a + "expert_count") != nullptr;
  c.info = find_arch(gguf_arch, experts);
  if (!c.info) {
    if (ck.info().container == "safetensors") {  // named as the user's config.json names it
      std::string types;
      for (const ArchInfo& a : architectures())
        for (const auto t : a.hf_model_types) types += (types.empty() ? "" : ", ") + std::string(t);
      const std::filesystem::path p(path);
      const std::string cfg = ((std::filesystem::is_directory(p) ? p : p.parent_path()) / "config.json").string();
      // A release's speculative drafter, not a model to run alone.
      const bool drafter = gguf_arch == "muse_glimmer_assistant" || gguf_arch == "gemma4_assistant" || gguf_arch == "gemma4_unified_assistant";
      const std::string how = gguf_arch == "muse_glimmer_assistant"
                                  ? "not a model to run alone: run its target with --spec dflash --model-draft " + path
                              : gguf_arch == "gemma4_assistant" || gguf_arch == "gemma4_unified_assistant"
                                  ? "not a model to run alone: run its target with --spec mtp --model-draft " + path
                                  : "that this engine does not run yet, alone or as a draft";
      throw Error(cfg, "model_type",
                  drafter ? "unsupported architecture: a speculative drafter (" + gguf_arch +
                                ", a block drafter reading its target's hidden states) " + how
                          : std::string("unsupported architecture"),
                  types, gguf_arch);
    }
    throw Error(path, "general.architecture", "unsupported architecture", arch_names(), gguf_arch);
  }
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
  if (c.head_dim % 2 != 0 || rope_dim % 2 != 0 || rope_dim > c.head_dim || (rope_dim != c.head_dim && !c.info->gated_delta))
    throw Error(path, "", "RoPE dimension (rope.dimension_count; partial rotary only for the Gated DeltaNet hybrids)",
                (c.info->gated_delta ? "even and at most" : "equal to") + std::string(" the (even) head dimension ") + std::to_string(c.head_dim),
                std::to_string(rope_dim));
  c.n_rot = rope_dim == c.head_dim ? 0 : rope_dim;
  c.rope = L.rope(a, rope_dim);
  c.rope.style = c.info->rope;
  if (ck.meta(a + "attention.sliding_window")) c.sliding_window = L.meta_int(a + "attention.sliding_window");
  if (family->configure) family->configure(L, a, c);  // the family's own hyperparameters
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
  m.output_norm = L.norm("output_norm.weight", c.n_embd);
  if (c.embd_norm) m.embd_norm.assign(static_cast<size_t>(c.n_embd), 1.0f);
  if (c.n_embd_per_layer > 0) gemma4_load_ple(L, c, m);
  const ArchInfo& info = *c.info;
  int64_t first_attn = 0;  // the layer whose attention tensors say what every attention layer has
  while (first_attn + 1 < c.n_layer && c.mixer(first_attn) != MixerKind::attention) ++first_attn;
  const std::string b0 = "blk." + std::to_string(first_attn) + ".";
  c.qkv_bias = L.wanted(b0 + "attn_q.bias", info.qkv_bias);
  c.o_bias = L.wanted(b0 + "attn_output.bias", info.o_bias);
  c.qk_norm = L.wanted(b0 + "attn_q_norm.weight", info.qk_norm);
  c.qk_norm_span = info.qk_norm_span;
  ExpertPlan plan = plan_experts(L, c, check_only);
  m.layers.reserve(static_cast<size_t>(c.n_layer));  // the store keeps pointers to the experts' Linears
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    LayerWeights w;
    w.mixer = c.mixer(i);
    w.ffn = c.n_expert > 0 ? FfnKind::moe : FfnKind::dense;
    if (family->load_layer) family->load_layer(L, b, c, w);
    else load_default_layer(L, b, c, w);
    if (opt.mode == Mode::w4a4 && !check_only)
      for (const MatMul* mm : w.matmuls())
        if (mm->nvfp4 && !mm->lin.has_input_scale())
          throw Error(path, mm->name + ".weight", "mode w4a4 needs an activation scale (input_scale) for every NVFP4 layer",
                      "an input scale (a W4A4 checkpoint, or calibrated scales)", "none");
    m.layers.push_back(std::move(w));
    if (plan.offload && !m.layers.back().experts.empty()) offload_experts(plan, L, c, i, m.layers.back().experts);
  }
  if (plan.store) {
    plan.store->finish(plan.budget(), c.n_expert_used, path);
    m.experts = std::move(plan.store);
  }
  m.experts_note = plan.note;
  load_kv_scales(L, c, 0, m);
  {  // each attention layer's KV group and its layer there (one group unless the family's layers differ)
    std::vector<StateSpec> specs;
    for (int64_t i = 0; i < c.n_layer; ++i) specs.push_back(layer_state_spec(c, i));
    m.kv_groups = kv_group_map(specs, m.kv_group, m.kv_layer);
    for (int64_t i = 0; i < c.n_layer; ++i) m.n_kv_layer += c.mixer(i) == MixerKind::attention;
  }
  if (opt.mtp) {
    m.mtp.reset(new Model());
    load_mtp(L, *family, m, *m.mtp->impl_);
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

ExpertStats Model::expert_stats() const { return impl_->experts ? impl_->experts->stats() : ExpertStats{}; }

void Model::set_experts_budget(int64_t bytes) {
  if (!impl_->experts) throw Error(impl_->source, "", "an experts budget for a model with an expert store", "--experts-budget at load", "none");
  impl_->experts->set_budget(bytes);
}

const ModelConfig& Model::config() const { return impl_->cfg; }
const Model* Model::mtp() const { return impl_->mtp.get(); }
bool Model::kv_scales_calibrated() const { return impl_->kv_scales_calibrated; }
Mode Model::mode() const { return impl_->mode; }

size_t Model::weight_bytes() const {
  const Impl& m = *impl_;
  size_t b = m.embd.bytes() + (m.cfg.tied_head ? 0 : m.head_own.bytes()) + m.output_norm.size() * 4;
  b += m.ple_table.bytes() + m.ple_model_proj.bytes + m.ple_norm.size() * 4;  // Gemma 4's per-layer embeddings
  b += m.nextn.eh_proj.bytes + (m.nextn.enorm.size() + m.nextn.hnorm.size()) * 4;  // an MTP module's input side
  for (const auto& l : m.layers) {
    b += (l.attn_norm.size() + l.ffn_norm.size() + l.q_norm.size() + l.k_norm.size()) * 4;
    b += (l.post_attn_norm.size() + l.post_ffn_norm.size() + l.ple_post_norm.size()) * 4;
    b += (l.lin.conv_w.size() + l.lin.A_log.size() + l.lin.dt_bias.size() + l.lin.norm.size()) * 4;
    b += (l.mamba.conv_w.size() + l.mamba.conv_b.size() + l.mamba.A_log.size() + l.mamba.dt_bias.size() + l.mamba.D.size() +
          l.mamba.norm.size() + l.exp_bias.size()) * 4;
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
  if (m.ple_table.rows() > 0) b -= m.ple_table.bytes() - m.ple_table.bytes() / static_cast<size_t>(m.ple_table.rows());
  for (const auto& l : m.layers) {
    if (l.experts.empty()) continue;
    size_t all = 0;
    for (const Expert& e : l.experts) all += e.gate.bytes + e.up.bytes + e.down.bytes;
    b -= all - all / l.experts.size() * static_cast<size_t>(m.cfg.n_expert_used);
  }
  return b;
}

namespace {
// Nemotron-H's layers: ", layers M-M*E: 2 Mamba-2 (8 heads of 16, state 16, 2 groups, conv 4),
// 1 attention, 1 MLP (squared ReLU), 1 MoE (sigmoid router, 2 groups keep 1, scale 2.5, latent 32)".
std::string nemotron_text(const ModelConfig& c) {
  if (c.pattern.empty()) return "";
  const auto n = [&](char ch) { return std::to_string(std::count(c.pattern.begin(), c.pattern.end(), ch)); };
  const MambaConfig& m = c.mamba;
  std::string s = ", layers " + c.pattern + ": " + n('M') + " Mamba-2";
  if (m.n_heads > 0)
    s += " (" + std::to_string(m.n_heads) + " heads of " + std::to_string(m.head_dim) + ", state " + std::to_string(m.d_state) + ", " +
         std::to_string(m.n_groups) + " groups, conv " + std::to_string(m.conv_kernel) + ")";
  s += ", " + n('*') + " attention, " + n('-') + " MLP (squared ReLU), " + n('E') + " MoE";
  if (c.n_expert > 0) {
    s += " (sigmoid router";
    if (c.n_group > 1) s += ", " + std::to_string(c.n_group) + " groups keep " + std::to_string(c.topk_group);
    if (c.routed_scale != 1.0f) s += ", scale " + std::to_string(c.routed_scale);
    if (c.moe_latent > 0) s += ", latent " + std::to_string(c.moe_latent);
    s += ")";
  }
  return s;
}

// The dimensions a layer's RoPE rotates (RopeLayerConfig::n_rot; 0: the whole head).
int64_t rot_dims(const RopeLayerConfig& r, int64_t head_dim) { return r.n_rot > 0 ? r.n_rot : head_dim; }

// Gemma 4's layers of each attention shape: ", 4 sliding-window layers (window 8, 2 KV heads of 16,
// RoPE over 16 dimensions) and 2 global (1 KV head of 32, K = V, RoPE over 8 dimensions)".
std::string attn_layers_text(const ModelConfig& c) {
  if (c.attn_layers.empty()) return "";
  std::string out;
  for (const bool sliding : {true, false}) {
    int n = 0;
    const AttnLayerConfig* a = nullptr;
    for (const AttnLayerConfig& x : c.attn_layers)
      if ((x.window > 0) == sliding) {
        ++n;
        a = &x;
      }
    if (n == 0) continue;
    out += (out.empty() ? ", " : " and ") + std::to_string(n) + (sliding ? " sliding-window layers (window " + std::to_string(a->window) + ", " : " global (") +
           std::to_string(a->n_kv) + " KV head" + (a->n_kv == 1 ? "" : "s") + " of " + std::to_string(a->head_dim) + (a->k_eq_v ? ", K = V" : "") +
           (a->rope < 0 ? ", no RoPE)" : ", RoPE over " + std::to_string(rot_dims(c.ropes[static_cast<size_t>(a->rope)], a->head_dim)) + " dimensions)");
  }
  if (c.final_softcap != 0.0f) out += ", logits soft-capped at " + std::to_string(c.final_softcap);
  return out;
}
}  // namespace

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
                (c.mixers.empty() || !c.pattern.empty() ? ""
                                  : ", " + std::to_string(c.n_layer - m.n_kv_layer) + " Gated DeltaNet layers (" +
                                        std::to_string(c.linear.n_k_heads) + " key / " + std::to_string(c.linear.n_v_heads) +
                                        " value heads of " + std::to_string(c.linear.d_k) + "/" + std::to_string(c.linear.d_v) +
                                        ", conv " + std::to_string(c.linear.conv_kernel) + ") and " + std::to_string(m.n_kv_layer) +
                                        " attention layers with output gate") +
                nemotron_text(c) + attn_layers_text(c) + (c.no_rope ? ", no RoPE" : ", RoPE ") +
                (c.no_rope ? "" : c.rope.style == RopeStyle::neox ? "NeoX" : "adjacent pairs") +
                (c.n_rot > 0 ? " over " + std::to_string(c.n_rot) + " of " + std::to_string(c.head_dim) + " dimensions" : "") +
                (c.rope.freq_factors.empty() ? "" : " with frequency factors") +
                (c.rope.linear_factor != 1.0 ? " linear x" + std::to_string(c.rope.linear_factor) : ""));
  int nv = 0, nf = 0, np = 0, nx = 0, nq = 0, n8 = 0, nmx = 0, nb8 = 0, nxmx = 0, nxb = 0, nw8 = 0;
  for (const auto& l : m.layers)
    for (const MatMul* mm : l.matmuls()) {
      (mm->nvfp4 ? nv : mm->fp8 ? nx : mm->use_q8 ? nq : mm->use_pinned ? np : nf)++;
      nxmx += mm->fp8 && std::string(mm->fp8.form()) == "mxfp8";
      nxb += mm->fp8 && std::string(mm->fp8.form()) == "b128";
      nw8 += mm->fp8_input_scale;
      n8 += !mm->nvfp4 && !mm->use_pinned && !mm->fp8 && !mm->use_q8 && mm->dense.dtype() == DType::e4m3;
      nmx += !mm->nvfp4 && !mm->use_pinned && mm->dense.dtype() == DType::mxfp8;
      nb8 += !mm->nvfp4 && !mm->use_pinned && mm->dense.dtype() == DType::fp8_b128;
    }
  // The first layer of each storage, wherever it is: a mixed checkpoint may hold NVFP4 only in its
  // MLPs or experts (FP8 attention beside NVFP4 MLPs, as NVIDIA ships them).
  const MatMul* any_nvfp4 = nullptr;
  const MatMul* any_float = nullptr;
  const MatMul* any_fp8 = nullptr;
  for (const auto& l : m.layers)
    for (const MatMul* mm : l.matmuls()) {
      if (mm->nvfp4 && !any_nvfp4) any_nvfp4 = mm;
      if (!mm->nvfp4 && !mm->use_pinned && !mm->fp8 && !mm->use_q8 && !any_float) any_float = mm;
      if ((mm->fp8 || mm->use_q8) && !any_fp8) any_fp8 = mm;
    }
  std::string lin = "linear layers: " + std::to_string(nv) + " NVFP4, " + std::to_string(nf) + " float (f32)" +
                    (n8 > 0 ? " of which " + std::to_string(n8) + " FP8 (E4M3 bytes as stored, the scale on the output)" : "") +
                    (nmx > 0 ? (n8 > 0 ? ", " : " of which ") + std::to_string(nmx) + " MXFP8 (E4M3 bytes and an E8M0 scale per 32, as stored)" : "") +
                    (nb8 > 0 ? (n8 + nmx > 0 ? ", " : " of which ") + std::to_string(nb8) + " FP8 with 128x128 block scales (as stored)" : "") +
                    (np > 0 ? ", " + std::to_string(np) + " float in the pinned order (the same bits on every ISA)" : "") +
                    (nx > 0 ? ", " + std::to_string(nx) + " FP8 integer-exact (E4M3 bytes as stored" +
                                  (nxmx > 0 ? ", " + std::to_string(nxmx) + " MXFP8" : "") +
                                  (nxb > 0 ? ", " + std::to_string(nxb) + " with 128x128 block scales" : "") + ")"
                            : "") +
                    (nq > 0 ? ", " + std::to_string(nq) + " Q8_0 integer-exact (blocks as stored)" : "");
  if (any_nvfp4)
    lin += "; NVFP4 mode " + std::string(mode_name(m.mode)) + ", kernels " + any_nvfp4->kernel(m.mode, 1) +
           " (1 token), " + any_nvfp4->kernel(m.mode, 64) + " (64 tokens), software prefetch " +
           std::string(prefetch_name(active_prefetch()));
  if (any_float) lin += "; float kernel " + any_float->kernel(m.mode, 1);
  if (any_fp8) lin += std::string("; ") + (any_fp8->fp8 ? "FP8" : "Q8_0") + " kernel " + any_fp8->kernel(m.mode, 1) +
                      " (integer-exact: the same bits on every ISA)";
  out.push_back(lin);
  if (nw8 > 0)
    out.push_back(std::to_string(nw8) + " FP8 layers declare W8A8 (a static input_scale): their inputs run as " +
                  std::string(mode_name(m.mode)) +
                  " takes them, not as E4M3 at that scale (the weights and their scales as stored)");
  out.push_back("head: " + m.head().type_name() + ", kernel " + m.head().kernel_name(m.mode) + "; embedding " +
                m.embd.type_name());
  out.push_back("weights: " + std::to_string(weight_bytes() / (1024 * 1024)) + " MiB as held, " +
                std::to_string(bytes_per_token() / (1024 * 1024)) + " MiB read per token; " +
                std::to_string(huge_resident_process() / (1024 * 1024)) + " MiB of the process on 2 MiB pages (transparent huge pages: " +
                (thp_mode().empty() ? std::string("absent") : thp_mode()) + ")");
  if (m.experts) {  // the store's slots as they are now (Model::set_experts_budget may have changed them)
    const ExpertStats st = m.experts->stats();
    out.push_back("experts: " + std::to_string(st.experts) + " read from " + st.file + " on demand into " + std::to_string(st.slots) +
                  " slots of " + bytes_text(st.slot_bytes) + " (" +
                  (st.written > 0 ? bytes_text(st.written) + " written at load" : std::string("the file held them all")) + ")");
  }
  if (!m.experts_note.empty()) out.push_back(m.experts_note);
  if (m.mtp) {  // --spec mtp: the module beside the trunk, in its own storage
    const Impl& t = *m.mtp->impl_;
    int n4 = 0, nf = 0;
    for (const LayerWeights& w : t.layers)
      for (const MatMul* mm : w.matmuls()) (mm->nvfp4 ? n4 : nf)++;
    (t.nextn.eh_proj.nvfp4 ? n4 : nf)++;
    const std::string layers = t.cfg.pattern.empty() ? "1 layer" : std::to_string(t.cfg.n_layer) + " layers (" + t.cfg.pattern + ")";
    out.push_back("MTP module: " + layers + " of the " + m.cfg.arch + " block, " + std::to_string(n4) + " NVFP4 and " + std::to_string(nf) +
                  " float linear layers, " + std::to_string((m.mtp->weight_bytes() + (1 << 19)) / (1024 * 1024)) +
                  " MiB as held (the trunk's embedding and head shared)");
  }
  return out;
}

}  // namespace nvfp4

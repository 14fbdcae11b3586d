// Loading a Gemma 4 assistant (include/nvfp4/gemma4_assistant.h says what it computes): config.json
// as Gemma4AssistantConfig reads it (its text_config a Gemma4TextConfig, every layer KV-shared),
// the tensors by their names in the file (model.layers.N.*, pre_projection, post_projection,
// masked_embedding.*), each in its own storage through the Loader every family uses.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "io/json_config.h"
#include "models/loader.h"
#include "runtime/gemma4_assistant.h"

namespace nvfp4 {

namespace {

const char* const kType = "gemma4_assistant";
const char* const kUnified = "gemma4_unified_assistant";  // Gemma 4 12B's (the unified release's): the same model

nlohmann::json read_json(const std::string& file) { return read_config_json_file(file, "a Gemma 4 assistant"); }

// Keys of one object of config.json, named in errors with their path ("text_config.hidden_size").
struct Keys {
  const nlohmann::json& j;
  const std::string& file;
  std::string prefix;
  bool has(const char* k) const { return j.contains(k) && !j[k].is_null(); }
  int64_t integer(const char* k, int64_t def, int64_t lo, int64_t hi) const {
    if (!has(k)) {
      if (def < lo) throw Error(file, prefix + k, "a Gemma 4 assistant's config key", "present", "absent");
      return def;
    }
    const auto& v = j[k];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw Error(file, prefix + k, "config value", "an integer in " + std::to_string(lo) + " .. " + std::to_string(hi), v.dump());
    return v.get<int64_t>();
  }
  double number(const nlohmann::json& o, const std::string& name, const char* k, double def) const {
    if (!o.contains(k) || o[k].is_null()) return def;
    const auto& v = o[k];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      throw Error(file, name + k, "config value", "a finite number > 0", v.dump());
    return v.get<double>();
  }
  bool flag(const char* k, bool def) const {
    if (!has(k)) return def;
    if (!j[k].is_boolean()) throw Error(file, prefix + k, "config value", "true or false", j[k].dump());
    return j[k].get<bool>();
  }
};

}  // namespace

std::string gemma4_assistant_type(const std::string& dir) {
  const std::filesystem::path f = std::filesystem::path(dir) / "config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(f, ec)) return "";
  try {
    const std::string t = read_json(f.string()).value("model_type", std::string());
    return t == kType || t == kUnified ? t : "";
  } catch (const Error&) {
    return "";
  } catch (const nlohmann::json::exception&) {
    return "";
  }
}

std::string gemma4_assistant_refusal(const std::string& dir) {
  return "unsupported architecture: a speculative drafter (" + gemma4_assistant_type(dir) + ", Gemma 4's assistant reading its target's hidden "
         "states and keys), not a model to run alone: run its target with --spec mtp --model-draft " + dir;
}

Gemma4Assistant::Gemma4Assistant(const std::string& dir, const Model& target, bool quantize) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.dir = dir;
  m.target = &target;
  m.mode = target.mode() == Mode::w4a4 ? Mode::a16q8 : target.mode();  // no activation scales of its own
  const std::string file = (std::filesystem::path(dir) / "config.json").string();
  const nlohmann::json j = read_json(file);
  const std::string type = j.value("model_type", std::string());
  if (type != kType && type != kUnified)
    throw Error(file, "model_type", "a Gemma 4 assistant", std::string(kType) + " or " + kUnified, type.empty() ? "absent" : type);
  m.type = type;
  const ModelConfig& tc = target.config();
  const std::string tsrc = target.impl().source;
  if (tc.arch != "gemma4" || tc.attn_layers.empty())
    throw Error(file, "model_type", "a Gemma 4 assistant drafts for a Gemma 4 target (" + tsrc + ")", "gemma4", tc.arch);
  if (!j.contains("text_config") || !j["text_config"].is_object())
    throw Error(file, "text_config", "the assistant's Gemma 4 text configuration", "an object", j.value("text_config", nlohmann::json()).dump());
  const nlohmann::json& t = j["text_config"];
  const Keys top{j, file, ""}, c{t, file, "text_config."};
  m.backbone = top.integer("backbone_hidden_size", type == kUnified ? 3840 : 1536, 1, 1 << 20);  // the configs' defaults
  if (m.backbone != tc.n_embd)
    throw Error(file, "backbone_hidden_size", "the hidden size of the target it drafts for (" + tsrc + ")", std::to_string(tc.n_embd),
                std::to_string(m.backbone));
  m.ordered = top.flag("use_ordered_embeddings", false);
  m.d = c.integer("hidden_size", -1, 1, 1 << 20);
  m.n_ff = c.integer("intermediate_size", -1, 1, 1 << 22);
  const int64_t n_layer = c.integer("num_hidden_layers", -1, 1, 256);
  m.n_head = c.integer("num_attention_heads", -1, 1, 1024);
  m.n_vocab = c.integer("vocab_size", tc.n_vocab, 1, int64_t{1} << 31);
  if (m.n_vocab != tc.n_vocab)
    throw Error(file, "text_config.vocab_size", "the target's vocabulary (" + tsrc + ")", std::to_string(tc.n_vocab), std::to_string(m.n_vocab));
  m.eps = static_cast<float>(c.number(t, "text_config.", "rms_norm_eps", 1e-6));
  // What Gemma4AssistantConfig.validate_architecture insists on, and what the engine's block runs.
  if (c.integer("hidden_size_per_layer_input", 0, 0, 1 << 20) != 0)
    throw Error(file, "text_config.hidden_size_per_layer_input", "an assistant without per-layer embeddings", "0", t["hidden_size_per_layer_input"].dump());
  if (c.flag("enable_moe_block", false)) throw Error(file, "text_config.enable_moe_block", "an assistant without experts", "false", "true");
  if (c.flag("use_double_wide_mlp", false)) throw Error(file, "text_config.use_double_wide_mlp", "the assistant's MLP", "false", "true");
  if (c.flag("attention_bias", false)) throw Error(file, "text_config.attention_bias", "the assistant's attention", "no bias (false)", "true");
  const int64_t shared = c.integer("num_kv_shared_layers", n_layer, 0, n_layer);
  if (shared != n_layer)
    throw Error(file, "text_config.num_kv_shared_layers", "every layer of an assistant reads the target's keys and values",
                std::to_string(n_layer), std::to_string(shared));
  if (c.has("hidden_activation") && t["hidden_activation"] != "gelu_pytorch_tanh")
    throw Error(file, "text_config.hidden_activation", "the assistant's MLP activation", "gelu_pytorch_tanh", t["hidden_activation"].dump());
  if (m.ordered) {
    m.n_centroids = top.integer("num_centroids", 2048, 1, m.n_vocab);
    m.top_k = top.integer("centroid_intermediate_top_k", 32, 1, m.n_centroids);
    if (m.n_vocab % m.n_centroids != 0)
      throw Error(file, "num_centroids", "the vocabulary in equal slices per centroid", "a divisor of " + std::to_string(m.n_vocab),
                  std::to_string(m.n_centroids));
  }
  // The target's layers it reads (transformers' store_full_length_kv): the last full-attention and
  // the last sliding layer that keep keys and values of their own.
  int64_t src[2] = {-1, -1};  // [sliding, full]
  for (int64_t l = 0; l < tc.n_layer; ++l) {
    const AttnLayerConfig& A = tc.attn_layers[static_cast<size_t>(l)];
    if (A.kv_from < 0) src[A.window > 0 ? 0 : 1] = l;
  }
  // Its layers: each a type, a head size and KV heads (per_layer_config, else the text config's).
  const nlohmann::json none;
  const nlohmann::json& lt = c.has("layer_types") ? t["layer_types"] : none;
  if (!lt.is_array() || static_cast<int64_t>(lt.size()) != n_layer)
    throw Error(file, "text_config.layer_types", "one type per layer", std::to_string(n_layer) + " entries", lt.dump());
  const nlohmann::json& plc = c.has("per_layer_config") ? t["per_layer_config"] : none;
  const nlohmann::json& rp = c.has("rope_parameters") ? t["rope_parameters"] : none;
  const int64_t window = c.integer("sliding_window", 512, 1, int64_t{1} << 31);
  const std::string path = dir;
  Checkpoint::OpenOptions oo;
  oo.raw_names = true;
  if (m.ordered) oo.index_tensors = {"masked_embedding.token_ordering"};
  m.ck = Checkpoint::open(dir, oo);
  LoadOptions opt;
  opt.mode = m.mode;
  opt.quantize = quantize;
  m.quantized = quantize;
  Loader L{*m.ck, opt, path, {}, std::make_shared<HugeArena>()};
  for (int64_t l = 0; l < n_layer; ++l) {
    const std::string ln = "text_config.layer_types[" + std::to_string(l) + "]";
    const std::string kind = lt[static_cast<size_t>(l)].is_string() ? lt[static_cast<size_t>(l)].get<std::string>() : lt[static_cast<size_t>(l)].dump();
    if (kind != "sliding_attention" && kind != "full_attention")
      throw Error(file, ln, "the assistant's layer kind", "sliding_attention or full_attention", kind);
    const bool sliding = kind == "sliding_attention";
    AssistantLayer y;
    y.source = src[sliding ? 0 : 1];
    if (y.source < 0)
      throw Error(file, ln, "a " + kind + " layer reads the target's last " + kind + " layer (" + tsrc + ")", "one in the target", "none");
    const AttnLayerConfig& A = tc.attn_layers[static_cast<size_t>(y.source)];
    y.head_dim = c.integer("head_dim", 256, 2, 4096);
    y.n_kv = c.integer("num_key_value_heads", 4, 1, m.n_head);
    if (!sliding && c.has("global_head_dim")) y.head_dim = c.integer("global_head_dim", 512, 2, 4096);
    if (!sliding && c.has("num_global_key_value_heads")) y.n_kv = c.integer("num_global_key_value_heads", 1, 1, m.n_head);
    const std::string key = std::to_string(l);
    if (plc.is_object() && plc.contains(key) && plc[key].is_object()) {
      const Keys p{plc[key], file, "text_config.per_layer_config." + key + "."};
      y.head_dim = p.integer("head_dim", y.head_dim, 2, 4096);
      y.n_kv = p.integer("num_key_value_heads", y.n_kv, 1, m.n_head);
    }
    if (y.head_dim != A.head_dim || y.n_kv != A.n_kv)
      throw Error(file, ln, "the head size and KV heads of the target layer " + std::to_string(y.source) + " it reads (" + tsrc + ")",
                  std::to_string(A.head_dim) + " / " + std::to_string(A.n_kv), std::to_string(y.head_dim) + " / " + std::to_string(y.n_kv));
    if (m.n_head % y.n_kv != 0)
      throw Error(file, ln, "query heads a multiple of the KV heads", "a divisor of " + std::to_string(m.n_head), std::to_string(y.n_kv));
    y.window = sliding ? window : 0;
    // RoPE of its type: "default" rotates the whole head, "proportional" the first
    // 2 x int(factor x head_dim / 2) dimensions' pairs (as gemma4_configure reads the target's).
    const nlohmann::json& r = rp.is_object() && rp.contains(kind) && rp[kind].is_object() ? rp[kind] : none;
    const std::string rn = "text_config.rope_parameters." + kind + ".";
    const std::string rt = r.is_object() ? r.value("rope_type", std::string("default")) : std::string("default");
    y.rope.style = RopeStyle::neox;
    y.rope.proportional = true;
    y.rope.theta = r.is_object() ? Keys{r, file, rn}.number(r, rn, "rope_theta", sliding ? 10000.0 : 1000000.0) : (sliding ? 10000.0 : 1000000.0);
    y.n_rot = y.head_dim;
    if (rt == "proportional") {
      const double f = Keys{r, file, rn}.number(r, rn, "partial_rotary_factor", 1.0);
      y.n_rot = 2 * static_cast<int64_t>(f * static_cast<double>(y.head_dim) / 2.0);
    } else if (rt != "default") {
      throw Error(file, rn + "rope_type", "the assistant's RoPE", "default or proportional", rt);
    }
    const std::string b = "model.layers." + key + ".";
    const int64_t qd = m.n_head * y.head_dim;
    y.q = L.linear(b + "self_attn.q_proj", qd, m.d);
    y.o = L.linear(b + "self_attn.o_proj", m.d, qd);
    y.q_norm = L.vec(b + "self_attn.q_norm.weight", y.head_dim);
    y.attn_norm = L.vec(b + "input_layernorm.weight", m.d);
    y.post_attn_norm = L.vec(b + "post_attention_layernorm.weight", m.d);
    y.ffn_norm = L.vec(b + "pre_feedforward_layernorm.weight", m.d);
    y.post_ffn_norm = L.vec(b + "post_feedforward_layernorm.weight", m.d);
    y.scalar = L.ck.find(b + "layer_scalar") ? L.vec(b + "layer_scalar", 1)[0] : 1.0f;
    if (!std::isfinite(y.scalar)) throw Error(dir, b + "layer_scalar", "layer scalar", "finite", std::to_string(y.scalar));
    y.gate = L.linear(b + "mlp.gate_proj", m.n_ff, m.d);
    y.up = L.linear(b + "mlp.up_proj", m.n_ff, m.d);
    y.down = L.linear(b + "mlp.down_proj", m.d, m.n_ff);
    // A KV-shared layer's k/v projections and norms go unread, as transformers ignores them.
    for (const char* u : {"self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.k_norm.weight", "self_attn.v_norm.weight"})
      if (L.ck.find(b + u)) L.used.insert(b + u);
    for (const MatMul* w : {&y.q, &y.o, &y.gate, &y.up, &y.down}) m.bytes += w->bytes;
    m.layers.push_back(std::move(y));
  }
  m.pre = L.linear("pre_projection", m.d, 2 * m.backbone);
  m.post = L.linear("post_projection", m.backbone, m.d);
  m.norm = L.vec("model.norm.weight", m.d);
  // The tied lm_head: model.embed_tokens (lm_head.weight when saved untied).
  const std::string head = L.ck.find("lm_head.weight") ? "lm_head.weight" : "model.embed_tokens.weight";
  if (head == "lm_head.weight" && L.ck.find("model.embed_tokens.weight")) L.used.insert("model.embed_tokens.weight");
  if (!m.ordered) m.head = L.head_tensor(head, m.n_vocab, m.d, true, false);
  m.bytes += m.pre.bytes + m.post.bytes + m.head.bytes();
  if (m.ordered) {
    m.centroids = L.linear("masked_embedding.centroids", m.n_centroids, m.d);
    const std::vector<float> order = L.vec("masked_embedding.token_ordering", m.n_vocab);
    std::vector<bool> seen(static_cast<size_t>(m.n_vocab), false);
    for (float v : order) {
      const int64_t id = static_cast<int64_t>(v);
      if (id < 0 || id >= m.n_vocab || seen[static_cast<size_t>(id)])
        throw Error(dir, "masked_embedding.token_ordering", "a permutation of the vocabulary", "each of 0 .. " + std::to_string(m.n_vocab - 1) + " once",
                    std::to_string(id) + (id >= 0 && id < m.n_vocab ? " twice" : ""));
      seen[static_cast<size_t>(id)] = true;
      m.order.push_back(static_cast<int32_t>(id));
    }
    // The head's rows in token_ordering's order: a centroid's tokens are then one run of rows.
    m.ordered_head = L.dense(head, m.n_vocab, m.d).gather(m.order);
    m.bytes += m.centroids.bytes + m.ordered_head.bytes();
  }
  for (const TensorEntry& e : m.ck->tensors())
    if (!L.used.count(e.name))
      throw Error(dir, e.name, "a tensor the Gemma 4 assistant does not use (a newer or other drafter?)", "absent", "present");
  m.target_embd_scale = tc.embd_scale != 0.0f ? tc.embd_scale : 1.0f;
}

Gemma4Assistant::~Gemma4Assistant() = default;

const Model& Gemma4Assistant::target() const { return *impl_->target; }
int64_t Gemma4Assistant::weight_bytes() const { return static_cast<int64_t>(impl_->bytes); }

std::string Gemma4Assistant::describe() const {
  const Impl& m = *impl_;
  std::ostringstream o;
  int64_t sliding = 0;
  std::set<int64_t> sources;
  for (const AssistantLayer& y : m.layers) {
    sliding += y.window > 0;
    sources.insert(y.source);
  }
  o << "Gemma 4 assistant " << m.dir << " (" << m.type << "): " << m.layers.size() << " layers (" << sliding << " sliding, "
    << m.layers.size() - static_cast<size_t>(sliding) << " full) of " << m.d << ", reading target layer" << (sources.size() > 1 ? "s " : " ");
  size_t i = 0;
  for (int64_t s : sources) o << (i++ ? " and " : "") << s;
  if (m.ordered) o << ", ordered embeddings (top " << m.top_k << " of " << m.n_centroids << " centroids)";
  o << ", " << storage_names(*m.ck) << (m.quantized ? " quantized to NVFP4 at load" : "") << ", "
    << static_cast<double>(m.bytes) / (1 << 20) << " MiB";
  return o.str();
}

}  // namespace nvfp4

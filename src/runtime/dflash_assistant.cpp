// Loading a DFlash assistant, in either of the two layouts published:
// - transformers' muse_glimmer_assistant (MuseGlimmerAssistantModel): config.json as
//   MuseGlimmerAssistantConfig reads it (its defaults where a key is absent), target_layer_ids as
//   hidden_states indices, encoder.fc / encoder.output_norm_enc, sliding layers bidirectional with
//   |q - k| <= window;
// - z-lab's dflash package (PyPI dflash, DFlashDraftModel: Qwen3-8B-DFlash-b16 and the like): a
//   qwen3 config.json with dflash_config {mask_token_id, target_layer_ids (layer indices: the
//   hidden state after layer i is hidden_states[i + 1]), block_size, input_embedding_scale,
//   output_multiplier, final_logit_softcapping}, fc / hidden_norm, sliding layers causal unless
//   is_causal is false, |q - k| < window.
// The tensors by their names (a base model, no prefix), each in its own storage through the Loader
// every family uses.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/json_config.h"
#include "runtime/dflash_assistant.h"
#include "models/loader.h"

namespace nvfp4 {

namespace {

const char* const kType = "muse_glimmer_assistant";
const char* const kZlab = "DFlashDraftModel";

// The architectures config.json lists ("" when none).
std::string architecture(const nlohmann::json& j) {
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() && j["architectures"][0].is_string())
    return j["architectures"][0].get<std::string>();
  return "";
}
bool zlab_arch(const std::string& a) { return a.find("DFlash") != std::string::npos && a.find("DraftModel") != std::string::npos; }

nlohmann::json read_config(const std::string& file) { return read_config_json_file(file, "a DFlash assistant"); }

struct Cfg {
  const nlohmann::json& j;
  const std::string& file;
  int64_t integer(const char* key, int64_t def, int64_t lo, int64_t hi) const {
    if (!j.contains(key) || j[key].is_null()) {
      if (def < 0) throw Error(file, key, "a DFlash assistant's config key", "present", "absent");
      return def;
    }
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw Error(file, key, "config value", "an integer in " + std::to_string(lo) + " .. " + std::to_string(hi), v.dump());
    return v.get<int64_t>();
  }
  double number(const nlohmann::json& o, const char* key, double def) const {
    if (!o.contains(key)) return def;
    const auto& v = o[key];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      throw Error(file, key, "config value", "a finite number > 0", v.dump());
    return v.get<double>();
  }
};

}  // namespace

std::string dflash_format(const std::string& dir) {
  const std::filesystem::path f = std::filesystem::path(dir) / "config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(f, ec)) return "";
  try {
    const nlohmann::json j = read_config(f.string());
    if (j.value("model_type", std::string()) == kType) return kType;
    const std::string a = architecture(j);
    return zlab_arch(a) ? a : "";
  } catch (const Error&) {
    return "";
  } catch (const nlohmann::json::exception&) {
    return "";
  }
}

bool is_dflash_assistant(const std::string& dir) { return !dflash_format(dir).empty(); }

std::string dflash_run_alone_refusal(const std::string& dir) {
  return "unsupported architecture: a speculative drafter (" + dflash_format(dir) +
         ", a DFlash block drafter reading its target's hidden states), not a model to run alone: run its target with "
         "--spec dflash --model-draft " + dir;
}

DflashDrafter::DflashDrafter(const std::string& dir, const Model& target, bool quantize) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.dir = dir;
  m.target = &target;
  // Its own layers in the target's mode, but a16q8 for w4a4 (the drafter has no activation scales;
  // drafts never change the output).
  m.mode = target.mode() == Mode::w4a4 ? Mode::a16q8 : target.mode();
  const std::string file = (std::filesystem::path(dir) / "config.json").string();
  const nlohmann::json j = read_config(file);
  const std::string type = j.value("model_type", std::string()), arch = architecture(j);
  const bool zlab = zlab_arch(arch);
  if (zlab && arch != kZlab)
    throw Error(file, "architectures", "--spec dflash: a DFlash drafter this engine runs (" + arch +
                    " adds a candidate selector and convolutions it does not run yet)", kZlab, arch);
  if (type != kType && !zlab)
    throw Error(file, "model_type", "--spec dflash: a DFlash assistant (muse_glimmer_assistant, or architectures DFlashDraftModel)",
                kType, type.empty() ? "absent" : type);
  m.format = zlab ? kZlab : kType;
  m.inclusive = !zlab;
  // z-lab's drafter keeps its own keys in dflash_config (falling back to the top level, as its
  // _draft_value does).
  const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& dc = zlab && j.contains("dflash_config") && j["dflash_config"].is_object() ? j["dflash_config"] : none;
  const auto key = [&](const char* k) -> const nlohmann::json* {
    if (dc.contains(k) && !dc[k].is_null()) return &dc[k];
    if (j.contains(k) && !j[k].is_null()) return &j[k];
    return nullptr;
  };
  nlohmann::json merged = j;
  for (auto it = dc.begin(); it != dc.end(); ++it) merged[it.key()] = it.value();
  const Cfg c{merged, file};
  const ModelConfig& tc = target.config();
  m.d = c.integer("hidden_size", -1, 1, 1 << 20);
  m.n_ff = c.integer("intermediate_size", -1, 1, 1 << 22);
  const int64_t n_layer = c.integer("num_hidden_layers", -1, 1, 256);
  m.n_head = c.integer("num_attention_heads", -1, 1, 1024);
  m.n_kv = c.integer("num_key_value_heads", m.n_head, 1, m.n_head);
  if (m.n_head % m.n_kv != 0)
    throw Error(file, "num_key_value_heads", "query heads a multiple of KV heads", "a divisor of " + std::to_string(m.n_head),
                std::to_string(m.n_kv));
  m.head_dim = c.integer("head_dim", m.d / m.n_head, 2, 4096);
  if (m.head_dim % 2) throw Error(file, "head_dim", "RoPE pairs", "an even head size", std::to_string(m.head_dim));
  m.block = c.integer("block_size", 16, 2, 64);
  m.mask_token = static_cast<int32_t>(c.integer("mask_token_id", -1, 0, (int64_t{1} << 31) - 1));
  m.n_vocab = c.integer("vocab_size", tc.n_vocab, 1, int64_t{1} << 31);
  m.eps = static_cast<float>(c.number(j, "rms_norm_eps", 1e-5));
  const int64_t window = c.integer("sliding_window", 2048, 1, int64_t{1} << 31);
  if (zlab) {
    m.embed_scale = static_cast<float>(c.number(merged, "input_embedding_scale", 1.0));
    m.out_mult = static_cast<float>(c.number(merged, "output_multiplier", 1.0));
    if (const nlohmann::json* sc = key("final_logit_softcapping"); sc && !(sc->is_number() && sc->get<double>() <= 0))
      m.softcap = static_cast<float>(c.number(merged, "final_logit_softcapping", 0.0));
  }
  if (j.value("hidden_act", std::string("silu")) != "silu")
    throw Error(file, "hidden_act", "the assistant's MLP activation", "silu", j["hidden_act"].dump());
  if (j.value("attention_bias", false))
    throw Error(file, "attention_bias", "the assistant's attention", "no bias (false)", "true");
  // The target's: hidden size and vocabulary (its embedding and head are the target's own).
  if (m.d != tc.n_embd)
    throw Error(file, "hidden_size", "the assistant's hidden size: the target's (" + target.impl().source + ")",
                std::to_string(tc.n_embd), std::to_string(m.d));
  if (m.n_vocab != tc.n_vocab)
    throw Error(file, "vocab_size", "the assistant's vocabulary: the target's (" + target.impl().source + ")",
                std::to_string(tc.n_vocab), std::to_string(m.n_vocab));
  if (m.mask_token >= tc.n_vocab)
    throw Error(file, "mask_token_id", "a token of the target's vocabulary", "< " + std::to_string(tc.n_vocab), std::to_string(m.mask_token));
  // The taps: hidden_states indices of the target (0: the embedding, n_layer: after the final norm).
  const nlohmann::json* tl = key("target_layer_ids");
  nlohmann::json ids = tl ? *tl : nlohmann::json::array({1, 13, 25, 37, 49});
  if (zlab && !tl) {  // dflash's build_target_layer_ids: spread over layers 1 .. num_target_layers - 3
    const int64_t nt = c.integer("num_target_layers", -1, 1, 1 << 20);
    ids = nlohmann::json::array();
    if (n_layer == 1) {
      ids.push_back(nt / 2);
    } else {
      const double span = static_cast<double>(nt - 3 - 1);
      for (int64_t i = 0; i < n_layer; ++i)  // Python's round: half to even, as nearbyint
        ids.push_back(static_cast<int64_t>(std::nearbyint(1.0 + static_cast<double>(i) * span / static_cast<double>(n_layer - 1))));
    }
  }
  const int off = zlab ? 1 : 0;  // z-lab: layer i's output is hidden_states[i + 1]
  if (!ids.is_array() || ids.empty())
    throw Error(file, "target_layer_ids", "the target's layers the assistant reads", "a non-empty list", ids.dump());
  for (const auto& v : ids) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() + off > tc.n_layer)
      throw Error(file, "target_layer_ids", std::string(zlab ? "a layer" : "a hidden_states index") + " of the target (" +
                      std::to_string(tc.n_layer) + " layers)", "0 .. " + std::to_string(tc.n_layer - off), v.dump());
    m.taps.push_back(v.get<int>() + off);
  }
  // Layers: sliding (the default) or full attention.
  std::vector<std::string> types(static_cast<size_t>(n_layer), zlab ? "full_attention" : "sliding_attention");
  if (zlab && !(j.contains("layer_types") && !j["layer_types"].is_null()) && j.value("use_sliding_window", false)) {
    const int64_t first = c.integer("max_window_layers", 0, 0, 1 << 20);  // Qwen3Config: sliding from this layer on
    for (int64_t l = first; l < n_layer; ++l) types[static_cast<size_t>(l)] = "sliding_attention";
  }
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    const auto& lt = j["layer_types"];
    if (!lt.is_array() || static_cast<int64_t>(lt.size()) != n_layer)
      throw Error(file, "layer_types", "one type per layer", std::to_string(n_layer) + " entries", lt.dump());
    for (size_t l = 0; l < types.size(); ++l) {
      types[l] = lt[l].is_string() ? lt[l].get<std::string>() : lt[l].dump();
      if (types[l] != "sliding_attention" && types[l] != "full_attention")
        throw Error(file, "layer_types[" + std::to_string(l) + "]", "the assistant's layer kind", "sliding_attention or full_attention", types[l]);
    }
  }
  // z-lab: sliding layers are causal unless is_causal says (is_causal true: every layer).
  std::vector<bool> causal(types.size(), false);
  if (zlab)
    for (size_t l = 0; l < types.size(); ++l)
      causal[l] = j.contains("is_causal") && j["is_causal"].is_boolean() ? j["is_causal"].get<bool>() : types[l] == "sliding_attention";
  // RoPE: the default kind (NeoX halves over the whole head).
  m.rope.style = RopeStyle::neox;
  m.rope.theta = 10000.0;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    const auto& rp = j["rope_parameters"];
    const std::string rt = rp.value("rope_type", std::string("default"));
    if (rt != "default")
      throw Error(file, "rope_parameters.rope_type", "the assistant's RoPE", "default", rt);
    m.rope.theta = c.number(rp, "rope_theta", 10000.0);
  } else if (j.contains("rope_theta")) {
    m.rope.theta = c.number(j, "rope_theta", 10000.0);
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    throw Error(file, "rope_scaling", "the assistant's RoPE", "none (default RoPE)", j["rope_scaling"].dump());

  // The weights, through the families' Loader (each tensor in its own storage, in the target's mode).
  m.ck = Checkpoint::open(dir);
  LoadOptions opt;
  opt.mode = m.mode;
  opt.quantize = quantize;
  m.quantized = quantize;
  const std::string path = dir;
  Loader L{*m.ck, opt, path, {}, std::make_shared<HugeArena>()};
  const int64_t d = m.d, q_out = m.n_head * m.head_dim, kv_out = m.n_kv * m.head_dim;
  const int64_t ntap = static_cast<int64_t>(m.taps.size());
  m.fc = L.linear(zlab ? "fc" : "encoder.fc", d, ntap * d);
  m.enc_norm = L.vec(zlab ? "hidden_norm.weight" : "encoder.output_norm_enc.weight", d);
  m.norm = L.vec("norm.weight", d);
  for (int64_t l = 0; l < n_layer; ++l) {
    const std::string b = "layers." + std::to_string(l) + ".";
    DflashLayer y;
    y.q = L.linear(b + "self_attn.q_proj", q_out, d);
    y.k = L.linear(b + "self_attn.k_proj", kv_out, d);
    y.v = L.linear(b + "self_attn.v_proj", kv_out, d);
    y.o = L.linear(b + "self_attn.o_proj", d, q_out);
    y.q_norm = L.vec(b + "self_attn.q_norm.weight", m.head_dim);
    y.k_norm = L.vec(b + "self_attn.k_norm.weight", m.head_dim);
    y.attn_norm = L.vec(b + "input_layernorm.weight", d);
    y.ffn_norm = L.vec(b + "post_attention_layernorm.weight", d);
    y.gate = L.linear(b + "mlp.gate_proj", m.n_ff, d);
    y.up = L.linear(b + "mlp.up_proj", m.n_ff, d);
    y.down = L.linear(b + "mlp.down_proj", d, m.n_ff);
    y.window = types[static_cast<size_t>(l)] == "sliding_attention" ? window : 0;
    y.causal = causal[static_cast<size_t>(l)];
    for (const MatMul* w : {&y.q, &y.k, &y.v, &y.o, &y.gate, &y.up, &y.down}) m.bytes += w->bytes;
    m.layers.push_back(std::move(y));
  }
  m.bytes += m.fc.bytes;
  for (const TensorEntry& e : m.ck->tensors())
    if (!L.used.count(e.name))
      throw Error(dir, e.name, "a tensor the DFlash assistant does not use (a newer or other drafter?)", "absent", "present");
}

DflashDrafter::~DflashDrafter() = default;

const Model& DflashDrafter::target() const { return *impl_->target; }
std::span<const int> DflashDrafter::taps() const { return impl_->taps; }
int64_t DflashDrafter::block_size() const { return impl_->block; }
int32_t DflashDrafter::mask_token() const { return impl_->mask_token; }
int64_t DflashDrafter::weight_bytes() const { return static_cast<int64_t>(impl_->bytes); }

std::string DflashDrafter::describe() const {
  const Impl& m = *impl_;
  std::ostringstream o;
  o << "DFlash assistant " << m.dir << " (" << m.format << "): " << m.layers.size() << " layers (";
  int64_t sliding = 0;
  for (const DflashLayer& y : m.layers) sliding += y.window > 0;
  if (sliding == static_cast<int64_t>(m.layers.size())) o << "sliding window " << m.layers[0].window;
  else o << sliding << " sliding, " << m.layers.size() - static_cast<size_t>(sliding) << " full";
  o << "), block " << m.block << ", taps [";
  for (size_t i = 0; i < m.taps.size(); ++i) o << (i ? ", " : "") << m.taps[i];
  o << "], " << storage_names(*m.ck) << (m.quantized ? " quantized to NVFP4 at load" : "") << ", "
    << static_cast<double>(m.bytes) / (1 << 20) << " MiB";
  return o.str();
}

}  // namespace nvfp4

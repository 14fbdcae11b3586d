// The trunk's multi-token-prediction (MTP) module: Qwen3.5 / Qwen3.6 / Qwen3-Next ship one layer
// of it (vLLM's qwen3_5_mtp.py, Qwen3_5MultiTokenPredictor), and llama.cpp appends it to the
// blocks as block `block_count - nextn_predict_layers`:
//   x  = eh_proj(concat(RMSNorm(embed(token)) * enorm, RMSNorm(h) * hnorm))   (embedding first)
//   x  = the family's block (a full-attention layer) over the module's own sequence
//   logits = head(RMSNorm(x) * shared_head_norm)                              (the trunk's head)
// with h the trunk's final-normed hidden state at the position before the token. Names: the
// checkpoint readers put HF's mtp.layers.0.* at blk.<n_layer>.* and mtp.fc / pre_fc_norm_embedding
// / pre_fc_norm_hidden / norm at blk.<n_layer>.nextn.eh_proj / enorm / hnorm / shared_head_norm
// (llama.cpp's names). Each tensor is read in its own storage (an NVFP4 release keeps it BF16).
#include "models/families.h"
#include "models/loader.h"

namespace nvfp4 {

namespace {

// The module's layers at blocks index .. index + kinds.size() - 1: kinds is a layer pattern's
// letters (Nemotron-H's nextn_layer_pattern), empty for one layer of the family's attention kind.
void load_into(const Loader& L, const Family& family, const Model::Impl& trunk, Model::Impl& mtp, int64_t index, const std::string& kinds) {
  const ModelConfig& tc = trunk.cfg;
  const std::string b = "blk." + std::to_string(index) + ".";
  if (!L.ck.find(b + "nextn.eh_proj.weight"))
    throw Error(L.path, b + "nextn.eh_proj.weight",
                "--spec mtp: the checkpoint's multi-token-prediction layer (HF mtp.fc.weight or mtp.layers.0.eh_proj.weight, llama.cpp blk.N.nextn.eh_proj)",
                "present", "absent (this checkpoint has no MTP layers; --mtp FILE reads them from a side file)");
  Loader M = L;  // its layers numbered from `index` (a family's load_layer reads the layer's kind by it)
  M.first_block = index;
  const int64_t k = kinds.empty() ? 1 : static_cast<int64_t>(kinds.size());
  mtp.cfg = tc;
  ModelConfig& c = mtp.cfg;
  c.n_layer = k;
  if (!c.mixers.empty()) {
    c.mixers.clear();
    for (int64_t l = 0; l < k; ++l)
      c.mixers.push_back(kinds.empty() || kinds[static_cast<size_t>(l)] == '*' ? MixerKind::attention : MixerKind::none);
  }
  if (!kinds.empty()) c.pattern = kinds;
  mtp.block = trunk.block;
  mtp.mode = trunk.mode;
  mtp.trunk = &trunk;
  mtp.source = M.path;
  mtp.nextn.enorm = M.norm(b + "nextn.enorm.weight", c.n_embd);
  mtp.nextn.hnorm = M.norm(b + "nextn.hnorm.weight", c.n_embd);
  mtp.nextn.eh_proj = M.linear(b + "nextn.eh_proj", c.n_embd, 2 * c.n_embd);
  mtp.output_norm = M.norm("blk." + std::to_string(index + k - 1) + ".nextn.shared_head_norm.weight", c.n_embd);
  std::vector<const MatMul*> all = {&mtp.nextn.eh_proj};
  for (int64_t l = 0; l < k; ++l) {
    LayerWeights w;
    w.mixer = c.mixer(l);
    w.ffn = c.n_expert > 0 ? FfnKind::moe : FfnKind::dense;
    const std::string bl = "blk." + std::to_string(index + l) + ".";
    if (family.load_layer) family.load_layer(M, bl, c, w);
    else load_default_layer(M, bl, c, w);
    mtp.layers.push_back(std::move(w));
  }
  for (const LayerWeights& w : mtp.layers)
    for (const MatMul* mm : w.matmuls()) all.push_back(mm);
  if (mtp.mode == Mode::w4a4)
    for (const MatMul* mm : all)
      if (mm->nvfp4 && !mm->lin.has_input_scale())
        throw Error(M.path, mm->name + ".weight", "mode w4a4 needs an activation scale (input_scale) for every NVFP4 layer of the MTP module",
                    "an input scale", "none");
  load_kv_scales(M, c, index, mtp);
  std::vector<StateSpec> specs;
  for (int64_t l = 0; l < k; ++l) specs.push_back(layer_state_spec(c, l));
  mtp.kv_groups = kv_group_map(specs, mtp.kv_group, mtp.kv_layer);
  mtp.n_kv_layer = 0;
  for (int64_t l = 0; l < k; ++l) mtp.n_kv_layer += c.mixer(l) == MixerKind::attention;
  L.used.insert(M.used.begin(), M.used.end());
}

// The MTP module's layer kinds from the checkpoint's metadata: Nemotron-H's nextn_layer_pattern
// (one step of attention, MLP or MoE layers, as many as nextn_predict_layers says), else empty (one
// layer of the family's attention block).
std::string module_kinds(const Checkpoint& ck, const std::string& arch, int64_t declared) {
  const gguf::Value* p = ck.meta(arch + ".nextn_layer_pattern");
  if (!p) {
    if (declared > 1)
      throw Error(ck.info().path, arch + ".nextn_predict_layers", "--spec mtp: MTP layers run as one chained module", "1 layer",
                  std::to_string(declared));
    return "";
  }
  const std::string kinds = p->as_string(arch + ".nextn_layer_pattern");
  if (const gguf::Value* s = ck.meta(arch + ".nextn_steps"); s && s->as_int(arch + ".nextn_steps") != 1)
    throw Error(ck.info().path, "num_nextn_predict_layers", "--spec mtp: one MTP step of the module's layers (vLLM's rule too)", "1",
                std::to_string(s->as_int(arch + ".nextn_steps")));
  if (kinds.empty() || kinds.size() > 16) throw Error(ck.info().path, "mtp_hybrid_override_pattern", "the MTP layers' pattern", "1 .. 16 letters", "\"" + kinds + "\"");
  for (size_t i = 0; i < kinds.size(); ++i)
    if (kinds[i] != '*' && kinds[i] != 'E' && kinds[i] != '-')
      throw Error(ck.info().path, "mtp_hybrid_override_pattern[" + std::to_string(i) + "]",
                  "an MTP layer: * (attention), E (MoE) or - (MLP); a Mamba-2 layer in the module is not run", "*, E or -",
                  std::string(1, kinds[i]));
  if (declared != static_cast<int64_t>(kinds.size()))
    throw Error(ck.info().path, arch + ".nextn_predict_layers", "the MTP layers the checkpoint holds (mtp.layers.*): one per letter of mtp_hybrid_override_pattern \"" + kinds + "\"",
                std::to_string(kinds.size()), std::to_string(declared));
  return kinds;
}

// How many MTP layers `ck` declares ({arch}.nextn_predict_layers), 0 when it says nothing.
int64_t declared_layers(const Checkpoint& ck, const std::string& key) {
  const gguf::Value* v = ck.meta(key);
  if (!v) return 0;
  const int64_t n = v->as_int(key);
  if (n < 0 || n > 64) throw Error(ck.info().path, key, "MTP layers", "0 .. 64", std::to_string(n));
  return n;
}

}  // namespace

void load_mtp(const Loader& L, const Family& family, const Model::Impl& trunk, Model::Impl& mtp) {
  const ModelConfig& tc = trunk.cfg;
  // LoadOptions::mtp_quantize: the module's float linear layers quantized to NVFP4, the trunk's not.
  LoadOptions mo = L.opt;
  mo.quantize = L.opt.quantize || L.opt.mtp_quantize;
  if (!L.opt.mtp_source) {
    const std::string key = L.meta("general.architecture").as_string("general.architecture") + ".nextn_predict_layers";
    const std::string arch = L.meta("general.architecture").as_string("general.architecture");
    const Loader Q = L.with_options(mo);
    load_into(Q, family, trunk, mtp, tc.n_layer, module_kinds(L.ck, arch, declared_layers(L.ck, key)));
    L.used.insert(Q.used.begin(), Q.used.end());
    return;
  }
  // A side file: its own loader, every tensor of it used; its norms as its container holds them
  // (a zero-centred family's GGUF holds them with the 1 added, its safetensors without).
  const Checkpoint& side = *L.opt.mtp_source;
  Loader M{side, mo, side.info().path, {}, L.arena};
  M.pool = L.pool;
  M.norm_offset = side.info().container != "gguf" && tc.info && tc.info->gated_delta ? 1.0f : 0.0f;
  int64_t index = tc.n_layer;
  if (const gguf::Value* a = side.meta("general.architecture")) {
    const std::string arch = a->as_string("general.architecture");
    const int64_t n = declared_layers(side, arch + ".nextn_predict_layers");
    if (n > 1)
      throw Error(side.info().path, arch + ".nextn_predict_layers", "--spec mtp: MTP layers run as one chained module", "1 layer",
                  std::to_string(n));
    if (const gguf::Value* bc = side.meta(arch + ".block_count"); bc && n == 1) {
      index = bc->as_int(arch + ".block_count") - 1;
      if (index != tc.n_layer)
        throw Error(side.info().path, arch + ".block_count", "an MTP side file's blocks: the trunk's and its MTP layer",
                    std::to_string(tc.n_layer + 1) + " (" + std::to_string(tc.n_layer) + " + 1)", std::to_string(index + 1));
    }
  }
  load_into(M, family, trunk, mtp, index, "");
  for (const TensorEntry& e : side.tensors())
    if (!M.used.count(e.name))
      throw Error(side.info().path, e.name, "tensor the MTP module does not use", "absent", "present");
  side.release_all();
}

}  // namespace nvfp4

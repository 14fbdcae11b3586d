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

void load_into(const Loader& M, const Family& family, const Model::Impl& trunk, Model::Impl& mtp, int64_t index) {
  const ModelConfig& tc = trunk.cfg;
  const std::string b = "blk." + std::to_string(index) + ".";
  if (!M.ck.find(b + "nextn.eh_proj.weight"))
    throw Error(M.path, b + "nextn.eh_proj.weight",
                "--spec mtp: the checkpoint's multi-token-prediction layer (HF mtp.fc.weight, llama.cpp blk.N.nextn.eh_proj)", "present",
                "absent (this checkpoint has no MTP layers; --mtp FILE reads them from a side file)");
  mtp.cfg = tc;
  ModelConfig& c = mtp.cfg;
  c.n_layer = 1;
  if (!c.mixers.empty()) c.mixers = {MixerKind::attention};
  mtp.block = trunk.block;
  mtp.mode = trunk.mode;
  mtp.trunk = &trunk;
  mtp.source = M.path;
  mtp.nextn.enorm = M.norm(b + "nextn.enorm.weight", c.n_embd);
  mtp.nextn.hnorm = M.norm(b + "nextn.hnorm.weight", c.n_embd);
  mtp.nextn.eh_proj = M.linear(b + "nextn.eh_proj", c.n_embd, 2 * c.n_embd);
  mtp.output_norm = M.norm(b + "nextn.shared_head_norm.weight", c.n_embd);
  LayerWeights w;
  w.mixer = MixerKind::attention;
  w.ffn = c.n_expert > 0 ? FfnKind::moe : FfnKind::dense;
  if (family.load_layer) family.load_layer(M, b, c, w);
  else load_default_layer(M, b, c, w);
  std::vector<const MatMul*> all = w.matmuls();
  all.push_back(&mtp.nextn.eh_proj);
  if (mtp.mode == Mode::w4a4)
    for (const MatMul* mm : all)
      if (mm->nvfp4 && !mm->lin.has_input_scale())
        throw Error(M.path, mm->name + ".weight", "mode w4a4 needs an activation scale (input_scale) for every NVFP4 layer of the MTP module",
                    "an input scale", "none");
  mtp.layers.push_back(std::move(w));
  load_kv_scales(M, c, index, mtp);
  const StateSpec spec = layer_state_spec(c, 0);
  mtp.kv_groups = kv_group_map(std::span<const StateSpec>(&spec, 1), mtp.kv_group, mtp.kv_layer);
  mtp.n_kv_layer = 1;
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
  if (!L.opt.mtp_source) {
    const std::string key = L.meta("general.architecture").as_string("general.architecture") + ".nextn_predict_layers";
    const int64_t n = declared_layers(L.ck, key);
    if (n > 1)
      throw Error(L.path, key, "--spec mtp: MTP layers run as one chained module", "1 layer", std::to_string(n));
    load_into(L, family, trunk, mtp, tc.n_layer);
    return;
  }
  // A side file: its own loader, every tensor of it used; its norms as its container holds them
  // (a zero-centred family's GGUF holds them with the 1 added, its safetensors without).
  const Checkpoint& side = *L.opt.mtp_source;
  Loader M{side, L.opt, side.info().path, {}, L.arena};
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
  load_into(M, family, trunk, mtp, index);
  for (const TensorEntry& e : side.tensors())
    if (!M.used.count(e.name))
      throw Error(side.info().path, e.name, "tensor the MTP module does not use", "absent", "present");
  side.release_all();
}

}  // namespace nvfp4

// A checkpoint as the runtime sees it, whatever its container and producer: validated in full when
// opened (SPEC.md section 6: nothing is used before every rule has passed), with tensors under
// canonical GGUF names (`token_embd.weight`, `blk.N.attn_q.weight`, `output_norm.weight`, ...;
// q/k rows in GGUF order, i.e. adjacent-pair RoPE as llama.cpp's LLAMA arch uses) and metadata
// under GGUF keys (`general.architecture`, `llama.block_count`, `tokenizer.ggml.tokens`, ...).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nvfp4/dense.h"
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/matrix.h"

namespace nvfp4 {

struct CheckpointInfo {
  std::string path;
  std::string container;   // "gguf" or "safetensors"
  std::string producer;    // "llama.cpp", "modelopt", "compressed-tensors", "float"
  std::string algorithm;   // "NVFP4", "W4A16_NVFP4", "MIXED_PRECISION", or the float/ggml type
  bool has_input_scales = false;  // every NVFP4 layer carries an activation scale (W4A4 servable)
  // Parts of the file the text model does not run (a release's vision tower, its MTP layers),
  // left out of tensors(): one line each, "vision tower: 28 tensors under model.visual.*".
  std::vector<std::string> set_aside;
};

enum class Storage { nvfp4, fp8, f32, f16, bf16, ggml_quant, other };

struct TensorEntry {
  std::string name;             // canonical name
  std::vector<int64_t> shape;   // outer dimension first: [n_out, n_in] for a matrix
  Storage storage = Storage::other;
  std::string storage_name;     // "NVFP4", "F16", "Q4_1", "F8_E4M3", ...
  double bits_per_weight = 0;   // storage bits per value, scales included
  float scale2 = 0;             // NVFP4 tensor scale (a multiplier), 0 otherwise
  float input_scale = 0;        // NVFP4 activation scale, 0 when absent
};

class Checkpoint {
 public:
  // Recognizes and validates PATH (a .gguf; the safetensors families arrive with the io work).
  // Throws nvfp4::Error naming the file, tensor, rule, expected and found.
  static std::unique_ptr<Checkpoint> open(const std::string& path);
  // With MTP layers read (--spec mtp): a release's multi-token-prediction layers, set aside
  // otherwise, appear as block n_layer (blk.<n_layer>.* and blk.<n_layer>.nextn.eh_proj / enorm /
  // hnorm / shared_head_norm, llama.cpp's names) with {arch}.nextn_predict_layers.
  struct OpenOptions {
    bool mtp = false;
    // One-dimensional I64 / I32 tensors of these names read as exact floats (a drafter's
    // token_ordering: vocabulary indices); any other integer tensor is refused as ever.
    std::vector<std::string> index_tensors;
    // Tensors by the names in the file, not llama.cpp's (a drafter whose layers are not a family's).
    bool raw_names = false;
  };
  static std::unique_ptr<Checkpoint> open(const std::string& path, const OpenOptions& o);
  virtual ~Checkpoint() = default;

  virtual const CheckpointInfo& info() const = 0;
  // Metadata under GGUF keys; nullptr when absent.
  virtual const gguf::Value* meta(const std::string& key) const = 0;
  // Every metadata key meta() answers, in the checkpoint's order (GGUF: the file's order).
  virtual std::vector<std::string> meta_keys() const = 0;
  // A hint that the caller has read metadata `key` for the last time (the tokenizer's arrays, once
  // the tokenizer is built), so that it does not stay beside the weights: GGUF and HF checkpoints
  // forget it (meta() answers nullptr for it after); the default keeps it.
  virtual void forget_meta(const std::string& key);
  virtual const std::vector<TensorEntry>& tensors() const = 0;
  const TensorEntry* find(const std::string& name) const;
  const TensorEntry& tensor(const std::string& name) const;  // throws when absent

  // The NVFP4 weight in the row layout (repacked when stored as ggml blocks), scale2 set.
  // Throws when the tensor is not NVFP4.
  virtual RowMatrix nvfp4(const std::string& name) const = 0;
  // NVFP4_AWQ's per-input-channel pre_quant_scale; empty when the layer has none.
  virtual std::vector<float> pre_quant_scale(const std::string& name) const;
  // Any tensor's values as float32, row-major, outer dimension first (NVFP4 and FP8 dequantized in
  // their pinned order, ggml block formats by ggml_dequantize_row).
  virtual std::vector<float> to_f32(const std::string& name) const = 0;
  // For F32/F16/BF16 storage: the dtype and a pointer to the stored values (zero copy); false
  // otherwise.
  virtual bool raw_float(const std::string& name, DType& dtype, const void*& data) const = 0;
  // The mapped file that holds tensor `name`'s bytes, as a shared owner: a model that reads a
  // tensor where it lies (raw_float) keeps it so, beyond the checkpoint's life. nullptr when the
  // bytes are not in a mapped file of its own (a parsed buffer), or the container does not say.
  virtual std::shared_ptr<const void> mapping(const std::string& name) const;
  // For ggml block storage (GGUF): the ggml type and a pointer to the stored blocks (zero copy);
  // false otherwise (the default).
  virtual bool raw_ggml(const std::string& name, uint32_t& type, const void*& data) const;
  // For an NVFP4 tensor stored in the row layout (safetensors): a view of its bytes where the
  // file maps them (zero copy; rows: the row order nvfp4() would give, filled when it is not the
  // stored one), valid while the checkpoint is; false otherwise (the default).
  virtual bool nvfp4_view(const std::string& name, RowView& view, std::vector<int64_t>& rows) const;
  // For an FP8 E4M3 layer in its stored row order: its bytes [n_out][n_in] (zero copy) and its
  // scale, one value or one per output row (weight = e4m3 * scale); false otherwise (the default).
  virtual bool raw_fp8(const std::string& name, const uint8_t*& codes, std::vector<float>& scale) const;
  // For an FP8 layer with scales along its inputs (MXFP8: E8M0 per 32; FP8 with 128 x 128 block
  // scales) in its stored row order: DType::mxfp8 or fp8_b128, its E4M3 bytes [n_out][n_in] and its
  // scales as DenseLinear::prepare_scaled takes them (pointers valid while the checkpoint is);
  // false otherwise (the default).
  virtual bool raw_fp8_scaled(const std::string& name, DType& dtype, const uint8_t*& codes, const void*& scales) const;
  // For an FP8 layer (any scale form): its tensors exactly as its file stores them (dtype name as
  // safetensors spells it, shape, bytes; file row order, which for q/k of Llama-style families is
  // not the canonical one), for writers that keep the layer losslessly (convert to a directory).
  // input_scale.data is null when the layer has none; false for any other layer (the default).
  struct StoredTensor {
    std::string dtype;
    std::vector<int64_t> shape;
    const uint8_t* data = nullptr;
    size_t nbytes = 0;
  };
  struct StoredFp8 {
    DType form = DType::e4m3;  // e4m3 (a scale per tensor or output row), mxfp8 or fp8_b128
    StoredTensor weight, scale, input_scale;
  };
  virtual bool stored_fp8(const std::string& name, StoredFp8& out) const;
  // The tensors of the parts set aside (info().set_aside: a release's MTP layers, its vision
  // tower) under the file's own names, as stored, for writers that keep them (convert to a
  // directory); empty for a container that does not hold them by name (the default).
  struct NamedTensor {
    std::string name;
    StoredTensor t;
  };
  virtual std::vector<NamedTensor> set_aside_tensors() const;
  // A hint that the caller has copied what it needs of tensor `name` (Model::load, into the
  // kernels' layout): its mapped pages leave the resident set (read again if touched), so a
  // loaded model does not hold its weights twice. Pointers from raw_float stay valid.
  virtual void release(const std::string& name) const;
  // The same for every mapped byte, once the load is over: release() keeps the pages that a
  // tensor shares with its neighbours (about one per tensor, 1 MiB for SmolLM2's 272 tensors).
  virtual void release_all() const;

  // How the checkpoint's own files name tensor or metadata key `name` (canonical, GGUF's), and
  // which file holds it: an HF directory names "blk.3.ffn_up.weight" as its safetensors tensor
  // "model.layers.3.mlp.up_proj.weight" (or, when absent, as the exporter would have named it) and
  // "llama.block_count" as config.json's "num_hidden_layers". Empty when the name is its own
  // (GGUF) or has no counterpart.
  virtual std::string own_name(const std::string& name, std::string& file) const;
  // `e` with its tensor, its file and the metadata keys quoted in its text in the checkpoint's own
  // names (own_name), for refusals raised over canonical names (Model::load).
  Error in_own_names(const Error& e) const;
};

// The storages of ck's tensors, sorted, joined by '/' ("BF16/I64"): what a drafter's log line says.
std::string storage_names(const Checkpoint& ck);

}  // namespace nvfp4

// Checkpoint::open: picks the reader by what PATH is.
#include <filesystem>
#include <set>

#include "io/checkpoint_gguf.h"
#include "io/checkpoint_safetensors.h"
#include "io/gemma4_layout.h"
#include "io/hybrid_layout.h"
#include "io/muse_layout.h"
#include "io/nemotron_layout.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"

namespace nvfp4 {

void Checkpoint::release(const std::string&) const {}
std::shared_ptr<const void> Checkpoint::mapping(const std::string&) const { return nullptr; }
void Checkpoint::release_all() const {}

std::string Checkpoint::own_name(const std::string&, std::string&) const { return ""; }

Error Checkpoint::in_own_names(const Error& e) const {
  std::string file = e.file(), tensor = e.tensor();
  if (!tensor.empty()) {
    std::string f;
    if (std::string own = own_name(tensor, f); !own.empty()) {
      tensor = own;
      if (!f.empty()) file = f;
    }
  }
  // Metadata keys quoted in the text ('llama.block_count'): config.json's keys, in config.json.
  bool from_config = false;
  const auto rename = [&](std::string t) {
    for (size_t at = t.find('\''); at != std::string::npos;) {
      size_t end = t.find('\'', at + 1);
      if (end == std::string::npos) break;
      std::string f;
      const std::string own = own_name(t.substr(at + 1, end - at - 1), f);
      if (!own.empty() && f.size() >= 11 && f.compare(f.size() - 11, 11, "config.json") == 0) {
        t.replace(at + 1, end - at - 1, own);
        end = at + 1 + own.size();
        if (at >= 9 && t.compare(at - 9, 9, "metadata ") == 0) {  // "metadata 'k'" -> "config.json key 'k'"
          t.replace(at - 9, 8, "config.json key");
          end += 7;
        }
        if (tensor.empty()) file = f;
        from_config = true;
      }
      at = t.find('\'', end + 1);
    }
    return t;
  };
  std::string rule = rename(e.rule()), expected = rename(e.expected()), found = rename(e.found());
  if (file.empty()) file = info().path;  // a metadata value's error (gguf::Value) names no file
  if (!from_config && tensor == e.tensor() && file == e.file()) return e;
  return Error(file, tensor, rule, expected, found);
}
void Checkpoint::forget_meta(const std::string&) {}
bool Checkpoint::raw_ggml(const std::string&, uint32_t&, const void*&) const { return false; }
bool Checkpoint::nvfp4_view(const std::string&, RowView&, std::vector<int64_t>&) const { return false; }
bool Checkpoint::raw_fp8(const std::string&, const uint8_t*&, std::vector<float>&) const { return false; }
bool Checkpoint::raw_fp8_scaled(const std::string&, DType&, const uint8_t*&, const void*&) const { return false; }
bool Checkpoint::stored_fp8(const std::string&, StoredFp8&) const { return false; }
std::vector<Checkpoint::NamedTensor> Checkpoint::set_aside_tensors() const { return {}; }

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& path) { return open(path, OpenOptions{}); }

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& path, const OpenOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw Error(path, "", "no such file or directory", "an existing path", "nothing");
  if (!fs::is_regular_file(st) && !fs::is_directory(st)) {  // refused before anything opens it
    const char* what = fs::is_fifo(st) ? "a FIFO (named pipe)" : fs::is_character_file(st) ? "a character device"
                       : fs::is_block_file(st) ? "a block device" : fs::is_socket(st) ? "a socket" : "something else";
    throw Error(path, "", "not a regular file or directory", "a .gguf or .safetensors file or an HF-style directory", what);
  }
  if (fs::is_regular_file(path) && path.size() >= 5 && path.substr(path.size() - 5) == ".gguf") {
    // llama.cpp's layouts of the hybrids, Nemotron-H, Gemma 4 and Muse Glimmer read as ours
    return muse_from_llamacpp(gemma4_from_llamacpp(nemotron_from_llamacpp(hybrid_from_llamacpp(open_gguf_checkpoint(path), o.mtp), o.mtp)));
  }
  const bool st_file = fs::is_regular_file(path) && path.size() >= 12 && path.substr(path.size() - 12) == ".safetensors";
  if (st_file || fs::is_directory(path)) return open_safetensors_checkpoint(path, o);
  throw Error(path, "", "unrecognized checkpoint", "a .gguf or .safetensors file or an HF-style directory", "something else");
}

const TensorEntry* Checkpoint::find(const std::string& name) const {
  for (const auto& t : tensors()) if (t.name == name) return &t;
  return nullptr;
}

const TensorEntry& Checkpoint::tensor(const std::string& name) const {
  const TensorEntry* t = find(name);
  if (!t) throw Error(info().path, name, "required tensor missing", "present", "absent");
  return *t;
}

std::vector<float> Checkpoint::pre_quant_scale(const std::string&) const { return {}; }

std::string storage_names(const Checkpoint& ck) {
  std::set<std::string> s;
  for (const TensorEntry& e : ck.tensors()) s.insert(e.storage_name);
  std::string o;
  for (const std::string& n : s) o += (o.empty() ? "" : "/") + n;
  return o;
}

}  // namespace nvfp4

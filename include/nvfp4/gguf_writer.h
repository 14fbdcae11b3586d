// GGUF v3 writer: metadata of every value type (in the order given), tensor infos, alignment
// (general.alignment when set, else 32), each tensor's data padded to the alignment, as PyPI
// `gguf`'s GGUFWriter lays a file out. Written through a temporary file, fsynced and renamed: on
// any error no output file exists.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nvfp4/gguf.h"

namespace nvfp4::gguf {

class Writer {
 public:
  // Sets `key` (replacing an earlier value in place, so the order of first setting is kept).
  void set(const std::string& key, Value v);
  void set_string(const std::string& key, const std::string& s);
  void set_u32(const std::string& key, uint32_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void remove(const std::string& key);
  const Value* find(const std::string& key) const;
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }

  // A tensor whose bytes the caller keeps alive until write(). ne in ggml order (ne[0] innermost).
  void add_tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, const void* data,
                  uint64_t nbytes);
  // A tensor produced when written (peak memory: one tensor). `produce` fills nbytes at dst.
  void add_tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t nbytes,
                  std::function<void(uint8_t* dst)> produce);
  size_t tensor_count() const { return tensors_.size(); }

  uint64_t alignment() const;
  std::vector<uint8_t> serialize() const;    // the whole file in memory (tests, small files)
  // Temp file + fsync + rename. `before_commit`, when given, runs on the complete temporary file
  // (its path) before the rename; if it throws, no output file exists.
  void write(const std::string& path,
             const std::function<void(const std::string&)>& before_commit = nullptr) const;
  // Called after each tensor is written with (tensors done, total), e.g. for a progress bar.
  std::function<void(size_t, size_t)> progress;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> ne;
    uint32_t type;
    uint64_t nbytes;
    const void* data;
    std::function<void(uint8_t*)> produce;
  };
  void check(const Tensor& t) const;
  std::vector<uint8_t> header() const;  // everything before the data section, padded
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace nvfp4::gguf

// safetensors: reader (by mmap, zero copy, validated before any tensor is used) and writer.
// Layout: u64 little-endian header length N, N bytes of JSON header (an object: optional
// "__metadata__" {string: string}, then per tensor {"dtype", "shape", "data_offsets": [begin, end]}
// with offsets relative to the byte buffer that follows the header), then the byte buffer.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nvfp4/mapped_file.h"

namespace nvfp4::safetensors {

// The dtypes of the format. The order is the format's own (it sorts tensors by it when writing).
enum class Dtype : int {
  BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32,
  F32, C64, F64, I64, U64
};
const char* dtype_name(Dtype d);
std::optional<Dtype> dtype_from_name(const std::string& s);
int dtype_bits(Dtype d);            // bits per element (4 for F4, 6 for F6_*)
bool dtype_is_float(Dtype d);       // converts to float32 with to_float()

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::U8;
  std::vector<int64_t> shape;  // row-major, outermost first; empty = scalar
  uint64_t begin = 0;          // offsets relative to the byte buffer
  uint64_t end = 0;
  const uint8_t* data = nullptr;  // not necessarily aligned: read with memcpy
  int64_t nbytes() const { return static_cast<int64_t>(end - begin); }
  int64_t elements() const;
};

class File {
 public:
  // Maps and parses `path`. Throws nvfp4::Error naming the file, the tensor, the rule, expected
  // and found when the file is damaged in any way.
  static File open(const std::string& path);
  // Parses a buffer the caller keeps alive (the fuzzer and tests).
  static File parse(const uint8_t* data, size_t size, const std::string& name);

  const std::string& path() const { return path_; }
  uint64_t header_size() const { return header_size_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in offset order
  const TensorInfo* find_tensor(const std::string& name) const;
  const TensorInfo& tensor(const std::string& name) const;  // throws nvfp4::Error when absent
  // MappedFile::drop for bytes of this file's map (nothing for a parsed buffer).
  void drop(const void* p, size_t n) const;
  void drop_all() const;  // drop() of the whole map
  // The map, shared (nullptr for a parsed buffer).
  std::shared_ptr<const MappedFile> map() const { return map_; }

 private:
  std::shared_ptr<MappedFile> map_;
  std::string path_;
  uint64_t header_size_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<TensorInfo> tensors_;
};

// Converts a float tensor (F32, F16, BF16, F64, F8_E4M3, F8_E5M2) to float32, `out` sized
// elements(). Throws nvfp4::Error naming the tensor for any other dtype.
void to_float(const TensorInfo& t, float* out, const std::string& file = "");

// Writing. Tensors are laid out as PyPI safetensors lays them out (by dtype, widest first, then by
// name; header padded with spaces to a multiple of 8), so a file with at most one metadata entry
// is byte-identical to the one `safetensors.torch.save_file` writes.
struct WriteTensor {
  std::string name;
  Dtype dtype = Dtype::U8;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;
};
// Serialises the whole file into memory (tests, small files).
std::vector<uint8_t> serialize(const std::vector<WriteTensor>& tensors,
                               const std::map<std::string, std::string>& metadata = {});
// Writes `path` through a temporary file in the same directory, fsync and rename: on any error
// (including a bad tensor: size not matching dtype x shape, duplicate name) no file is left.
void write(const std::string& path, const std::vector<WriteTensor>& tensors,
           const std::map<std::string, std::string>& metadata = {});

}  // namespace nvfp4::safetensors

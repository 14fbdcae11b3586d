// GGUF (v2/v3) reader: the header, every metadata value type, tensor infos and alignment, parsed
// and validated before any tensor data is used. Tensor data is read in place (zero copy).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nvfp4/mapped_file.h"

namespace nvfp4::gguf {

enum class ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8,
  array = 9, u64 = 10, i64 = 11, f64 = 12
};
const char* value_type_name(ValueType t);

struct Value;

// The elements of an array value, stored by element type rather than as one Value each (a 128K
// vocabulary is ~400K elements in tokenizer.ggml.*): fixed-size elements as their little-endian
// bytes (as a GGUF file holds them), strings as one byte pool and the end of each, arrays of
// arrays (rare) as Values. Element accessors throw nvfp4::Error (naming `key`) on an index out of
// range or elements of another type, with the messages Value's accessors give.
class Array {
 public:
  // Defined where Value is complete (nested_ holds Values).
  Array();
  explicit Array(ValueType elem);
  ~Array();
  Array(const Array&);
  Array(Array&&) noexcept;
  Array& operator=(const Array&);
  Array& operator=(Array&&) noexcept;
  ValueType elem_type() const { return elem_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }

  std::string_view str(size_t i, const std::string& key = "") const;  // string elements
  int64_t as_int(size_t i, const std::string& key = "") const;        // integer elements
  double as_float(size_t i, const std::string& key = "") const;       // f32/f64, integers convert
  Value at(size_t i, const std::string& key = "") const;              // any element, as a copy

  // Appends `e`; throws when its type is not the element type.
  void push_back(const Value& e, const std::string& key = "");
  void push_string(std::string_view s);  // string elements only (throws otherwise)
  // Appends n fixed-size elements from their little-endian bytes (bools must be 0 or 1).
  void append_raw(const uint8_t* p, size_t n, const std::string& key = "");
  // Room for n elements (and, for strings, `string_bytes` bytes of them).
  void reserve(size_t n, size_t string_bytes = 0);
  // Fixed-size elements: their bytes as written to a file (size() x the element's width).
  // Strings: the pool, each string's bytes one after the other.
  const std::vector<uint8_t>& bytes() const { return raw_; }
  size_t heap_bytes() const;  // what the elements hold on the heap (capacities; nested included)
  bool operator==(const Array& o) const;

 private:
  ValueType elem_ = ValueType::u8;
  size_t n_ = 0;
  std::vector<uint8_t> raw_;    // fixed-size elements; string bytes
  std::vector<uint64_t> ends_;  // strings: where element k ends in raw_
  std::vector<Value> nested_;   // arrays of arrays
};

struct Value {
  ValueType type = ValueType::u8;
  uint64_t u = 0;          // unsigned integer types and bool
  int64_t i = 0;           // signed integer types
  double f = 0.0;          // f32 / f64
  std::string s;           // string
  Array arr;               // array

  bool is_integer() const;
  // Throw nvfp4::Error (naming `key`) when the value is not of a fitting type.
  int64_t as_int(const std::string& key = "") const;
  double as_float(const std::string& key = "") const;  // integers convert too
  const std::string& as_string(const std::string& key = "") const;
  bool as_bool(const std::string& key = "") const;
};

// Values of one type, for metadata a reader or layout makes (io/*_layout.cpp, tests).
Value u32_value(uint64_t x);
Value bool_value(bool b);
Value text_value(const std::string& s);
Value u32_array_value(const std::vector<int64_t>& xs);

// Bytes one element of type t takes in a file (strings and arrays: 0, they vary).
size_t fixed_size(ValueType t);

struct TensorInfo {
  std::string name;
  std::vector<int64_t> ne;   // ggml order: ne[0] is the innermost (contiguous) dimension
  uint32_t type = 0;         // ggml type id (see ggml_types.h)
  uint64_t offset = 0;       // relative to the data section
  const uint8_t* data = nullptr;
  int64_t nbytes = 0;
  int64_t elements() const;
  int64_t rows() const { return ne.empty() ? 0 : elements() / ne[0]; }
};

class File {
 public:
  // Maps and parses `path`. Throws nvfp4::Error naming the file, the rule, expected and found.
  static File open(const std::string& path);
  // Parses a buffer the caller keeps alive (used by the fuzzer and tests).
  static File parse(const uint8_t* data, size_t size, const std::string& name);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(const std::string& key) const;  // nullptr when absent
  const Value& get(const std::string& key) const;   // throws nvfp4::Error when absent
  // Forgets `key` (find() answers nullptr after; nothing when absent): for metadata read once,
  // such as the tokenizer's arrays once the tokenizer is built.
  void erase(const std::string& key);
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(const std::string& name) const;
  const TensorInfo& tensor(const std::string& name) const;  // throws when absent
  // MappedFile::drop for bytes of this file's map (nothing for a parsed buffer).
  void drop(const void* p, size_t n) const;
  void drop_all() const;  // drop() of the whole map
  // The map, shared (nullptr for a parsed buffer).
  std::shared_ptr<const MappedFile> map() const { return map_; }

 private:
  std::shared_ptr<MappedFile> map_;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace nvfp4::gguf

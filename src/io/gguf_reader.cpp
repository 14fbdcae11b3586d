// GGUF reader. Layout (little-endian): magic "GGUF", u32 version, u64 n_tensors, u64 n_kv,
// n_kv x (string key, u32 type, value), n_tensors x (string name, u32 n_dims, u64 ne[n_dims],
// u32 ggml type, u64 offset), padding to `general.alignment` (default 32), then the data section.
// A string is u64 length + bytes; an array is u32 element type + u64 count + elements.
// Every length and count is checked against the bytes left before it is used, so a damaged file
// is refused with the rule it broke, never read out of bounds.
#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"

namespace nvfp4::gguf {

namespace {

constexpr int kMaxArrayDepth = 4;
constexpr uint32_t kMaxDims = 4;

class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n, const std::string& file) : p_(p), n_(n), file_(file) {}
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }
  void need(size_t k, const char* what) const {
    if (k > left()) {
      throw Error(file_, "", std::string("truncated file while reading ") + what,
                  std::to_string(k) + " more bytes at offset " + std::to_string(pos_),
                  std::to_string(left()) + " bytes left");
    }
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view string_view(const char* what) {
    const uint64_t len = read<uint64_t>(what);
    need(len, what);
    std::string_view s(reinterpret_cast<const char*>(p_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }
  std::string string(const char* what) { return std::string(string_view(what)); }
  uint64_t skip_string(const char* what) { return string_view(what).size(); }
  const uint8_t* bytes(size_t k, const char* what) {
    need(k, what);
    const uint8_t* p = p_ + pos_;
    pos_ += k;
    return p;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& file_;
};

size_t min_size(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: case ValueType::string: return 8;
    case ValueType::array: return 12;
  }
  return 1;
}

bool known_type(uint32_t t) { return t <= 12; }

Value read_value(Cursor& c, ValueType t, const std::string& file, const std::string& key, int depth) {
  Value v;
  v.type = t;
  switch (t) {
    case ValueType::u8: v.u = c.read<uint8_t>("a u8 value"); break;
    case ValueType::i8: v.i = c.read<int8_t>("an i8 value"); break;
    case ValueType::u16: v.u = c.read<uint16_t>("a u16 value"); break;
    case ValueType::i16: v.i = c.read<int16_t>("an i16 value"); break;
    case ValueType::u32: v.u = c.read<uint32_t>("a u32 value"); break;
    case ValueType::i32: v.i = c.read<int32_t>("an i32 value"); break;
    case ValueType::u64: v.u = c.read<uint64_t>("a u64 value"); break;
    case ValueType::i64: v.i = c.read<int64_t>("an i64 value"); break;
    case ValueType::f32: v.f = c.read<float>("an f32 value"); break;
    case ValueType::f64: v.f = c.read<double>("an f64 value"); break;
    case ValueType::boolean: {
      const uint8_t b = c.read<uint8_t>("a bool value");
      if (b > 1) throw Error(file, "", "metadata '" + key + "': bool must be 0 or 1", "0 or 1", std::to_string(b));
      v.u = b;
      break;
    }
    case ValueType::string: v.s = c.string("a string value"); break;
    case ValueType::array: {
      if (depth >= kMaxArrayDepth) {
        throw Error(file, "", "metadata '" + key + "': arrays nested too deep",
                    "at most " + std::to_string(kMaxArrayDepth) + " levels", "more");
      }
      const uint32_t et = c.read<uint32_t>("an array element type");
      if (!known_type(et)) {
        throw Error(file, "", "metadata '" + key + "': unknown array element type", "0..12", std::to_string(et));
      }
      const auto elem = static_cast<ValueType>(et);
      const uint64_t count = c.read<uint64_t>("an array length");
      if (count > c.left() / min_size(elem)) {
        throw Error(file, "", "metadata '" + key + "': array longer than the file",
                    "at most " + std::to_string(c.left() / min_size(elem)) + " elements",
                    std::to_string(count));
      }
      v.arr = Array(elem);
      const auto n = static_cast<size_t>(count);
      if (const size_t w = fixed_size(elem)) {
        // Checked above: count x w bytes are left.
        const uint8_t* p = c.bytes(n * w, "array elements");
        try {
          v.arr.append_raw(p, n, key);
        } catch (const Error& e) {
          throw Error(file, "", e.rule(), e.expected(), e.found());
        }
      } else if (elem == ValueType::string) {
        // Two passes: the lengths (each checked against the bytes left), then one pool of exactly
        // their sum, so the strings take their own bytes and one end offset each.
        Cursor scan = c;
        uint64_t total = 0;
        for (size_t k = 0; k < n; ++k) total += scan.skip_string("a string value");
        v.arr.reserve(n, static_cast<size_t>(total));
        for (size_t k = 0; k < n; ++k) v.arr.push_string(c.string_view("a string value"));
      } else {
        v.arr.reserve(n);
        for (size_t k = 0; k < n; ++k) v.arr.push_back(read_value(c, elem, file, key, depth + 1), key);
      }
      break;
    }
  }
  return v;
}

}  // namespace

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

File File::open(const std::string& path) {
  auto map = std::make_shared<MappedFile>(path);
  File f = parse(map->data(), map->size(), path);
  // Every metadata value and tensor info is a copy now: the header's pages (megabytes for a large
  // vocabulary) leave the resident set.
  map->drop(map->data(), static_cast<size_t>(std::min<uint64_t>(f.data_offset_, map->size())));
  f.map_ = std::move(map);
  return f;
}

File File::parse(const uint8_t* data, size_t size, const std::string& name) {
  File f;
  f.path_ = name;
  Cursor c(data, size, name);
  c.need(4, "the magic");
  if (std::memcmp(data, "GGUF", 4) != 0) {
    throw Error(name, "", "not a GGUF file", "magic 'GGUF'", "other bytes");
  }
  c.read<uint32_t>("the magic");
  f.version_ = c.read<uint32_t>("the version");
  if (f.version_ != 2 && f.version_ != 3) {
    throw Error(name, "", "unsupported GGUF version", "2 or 3", std::to_string(f.version_));
  }
  const uint64_t n_tensors = c.read<uint64_t>("the tensor count");
  const uint64_t n_kv = c.read<uint64_t>("the metadata count");
  // Each entry takes at least 12 (kv) or 24 (tensor info) bytes.
  if (n_kv > c.left() / 12) {
    throw Error(name, "", "metadata count larger than the file can hold",
                "at most " + std::to_string(c.left() / 12), std::to_string(n_kv));
  }
  if (n_tensors > c.left() / 24) {
    throw Error(name, "", "tensor count larger than the file can hold",
                "at most " + std::to_string(c.left() / 24), std::to_string(n_tensors));
  }
  std::unordered_set<std::string> keys;
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = c.string("a metadata key");
    const uint32_t t = c.read<uint32_t>("a metadata type");
    if (!known_type(t)) throw Error(name, "", "metadata '" + key + "' has an unknown value type", "0..12", std::to_string(t));
    Value v = read_value(c, static_cast<ValueType>(t), name, key, 0);
    if (!keys.insert(key).second) throw Error(name, "", "duplicate metadata key", "unique keys", key);
    f.kv_.emplace_back(std::move(key), std::move(v));
  }
  if (const Value* a = f.find("general.alignment")) {
    if (a->type != ValueType::u32 || a->u == 0 || (a->u & (a->u - 1)) != 0) {
      throw Error(name, "", "general.alignment must be a u32 power of two", "a power of two",
                  a->type == ValueType::u32 ? std::to_string(a->u) : value_type_name(a->type));
    }
    f.alignment_ = a->u;
  }
  std::unordered_set<std::string> names;
  for (uint64_t k = 0; k < n_tensors; ++k) {
    TensorInfo t;
    t.name = c.string("a tensor name");
    const uint32_t nd = c.read<uint32_t>("a tensor's dimension count");
    if (nd == 0 || nd > kMaxDims) {
      throw Error(name, t.name, "tensor dimension count out of range", "1..4", std::to_string(nd));
    }
    int64_t elements = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      const uint64_t e = c.read<uint64_t>("a tensor dimension");
      if (e == 0 || e > (uint64_t{1} << 40) || static_cast<uint64_t>(elements) > (uint64_t{1} << 48) / e) {
        throw Error(name, t.name, "tensor dimension out of range", "1..2^40 and at most 2^48 elements",
                    std::to_string(e));
      }
      elements *= static_cast<int64_t>(e);
      t.ne.push_back(static_cast<int64_t>(e));
    }
    t.type = c.read<uint32_t>("a tensor type");
    if (!ggml_type_info(t.type)) throw Error(name, t.name, "unknown ggml tensor type", "a known type id", std::to_string(t.type));
    t.offset = c.read<uint64_t>("a tensor offset");
    if (t.offset % f.alignment_ != 0) {
      throw Error(name, t.name, "tensor data offset not aligned",
                  "a multiple of " + std::to_string(f.alignment_), std::to_string(t.offset));
    }
    const GgmlTypeInfo* ti = ggml_type_info(t.type);
    if (t.ne[0] % ti->block_values != 0) {
      throw Error(name, t.name, std::string("row length not a multiple of the ") + ti->name + " block",
                  "ne[0] % " + std::to_string(ti->block_values) + " == 0", "ne[0] = " + std::to_string(t.ne[0]));
    }
    t.nbytes = elements / ti->block_values * ti->block_bytes;
    if (!names.insert(t.name).second) throw Error(name, t.name, "duplicate tensor name", "unique names", t.name);
    f.tensors_.push_back(std::move(t));
  }
  const uint64_t pos = c.pos();
  f.data_offset_ = (pos + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  if (f.data_offset_ > size && !f.tensors_.empty()) {
    throw Error(name, "", "data section starts past the end of the file",
                "<= " + std::to_string(size), std::to_string(f.data_offset_));
  }
  const uint64_t data_size = size >= f.data_offset_ ? size - f.data_offset_ : 0;
  std::vector<const TensorInfo*> order;
  for (TensorInfo& t : f.tensors_) {
    if (t.offset > data_size || static_cast<uint64_t>(t.nbytes) > data_size - t.offset) {
      throw Error(name, t.name, "tensor data runs past the end of the file",
                  "offset + size <= " + std::to_string(data_size),
                  std::to_string(t.offset) + " + " + std::to_string(t.nbytes));
    }
    t.data = data + f.data_offset_ + t.offset;
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    if (order[k - 1]->offset + order[k - 1]->nbytes > order[k]->offset) {
      throw Error(name, order[k]->name, "tensor data overlaps another tensor",
                  "disjoint from '" + order[k - 1]->name + "'",
                  "offset " + std::to_string(order[k]->offset) + " < " +
                      std::to_string(order[k - 1]->offset + order[k - 1]->nbytes));
    }
  }
  return f;
}

const Value* File::find(const std::string& key) const {
  for (const auto& [k, v] : kv_) if (k == key) return &v;
  return nullptr;
}

const Value& File::get(const std::string& key) const {
  const Value* v = find(key);
  if (!v) throw Error(path_, "", "required metadata key missing", key, "absent");
  return *v;
}

void File::drop(const void* p, size_t n) const {
  if (map_) map_->drop(p, n);
}

void File::drop_all() const {
  if (map_) map_->drop_all();
}

void File::erase(const std::string& key) {
  for (auto it = kv_.begin(); it != kv_.end(); ++it) {
    if (it->first == key) {
      kv_.erase(it);
      return;
    }
  }
}

const TensorInfo* File::find_tensor(const std::string& name) const {
  for (const auto& t : tensors_) if (t.name == name) return &t;
  return nullptr;
}

const TensorInfo& File::tensor(const std::string& name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw Error(path_, name, "required tensor missing", "present", "absent");
  return *t;
}

}  // namespace nvfp4::gguf

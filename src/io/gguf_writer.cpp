#include "nvfp4/gguf_writer.h"

#include <cstring>
#include <set>
#include <string_view>

#include "nvfp4/atomic_file.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"

namespace nvfp4::gguf {

namespace {

class Out {
 public:
  std::vector<uint8_t> b;
  template <typename T>
  void put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
  }
  void bytes(const void* p, size_t n) {
    const size_t at = b.size();
    b.resize(at + n);
    if (n) std::memcpy(b.data() + at, p, n);
  }
  void str(std::string_view s) {
    put<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
};

void put_value(Out& o, const Value& v, const std::string& key) {
  switch (v.type) {
    case ValueType::u8: o.put<uint8_t>(static_cast<uint8_t>(v.u)); break;
    case ValueType::i8: o.put<int8_t>(static_cast<int8_t>(v.i)); break;
    case ValueType::u16: o.put<uint16_t>(static_cast<uint16_t>(v.u)); break;
    case ValueType::i16: o.put<int16_t>(static_cast<int16_t>(v.i)); break;
    case ValueType::u32: o.put<uint32_t>(static_cast<uint32_t>(v.u)); break;
    case ValueType::i32: o.put<int32_t>(static_cast<int32_t>(v.i)); break;
    case ValueType::u64: o.put<uint64_t>(v.u); break;
    case ValueType::i64: o.put<int64_t>(v.i); break;
    case ValueType::f32: o.put<float>(static_cast<float>(v.f)); break;
    case ValueType::f64: o.put<double>(v.f); break;
    case ValueType::boolean: o.put<uint8_t>(v.u ? 1 : 0); break;
    case ValueType::string: o.str(v.s); break;
    case ValueType::array: {
      const Array& a = v.arr;
      o.put<uint32_t>(static_cast<uint32_t>(a.elem_type()));
      o.put<uint64_t>(a.size());
      if (a.elem_type() == ValueType::string) {
        for (size_t k = 0; k < a.size(); ++k) o.str(a.str(k, key));
      } else if (a.elem_type() == ValueType::array) {
        for (size_t k = 0; k < a.size(); ++k) put_value(o, a.at(k, key), key);
      } else {
        o.bytes(a.bytes().data(), a.bytes().size());  // already in file form
      }
      break;
    }
    default:
      throw Error("", key, "metadata '" + key + "' has an unknown value type", "0..12",
                  std::to_string(static_cast<uint32_t>(v.type)));
  }
}

uint64_t pad(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

void Writer::set(const std::string& key, Value v) {
  for (auto& [k, old] : kv_) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  kv_.emplace_back(key, std::move(v));
}

void Writer::set_string(const std::string& key, const std::string& s) {
  Value v;
  v.type = ValueType::string;
  v.s = s;
  set(key, std::move(v));
}

void Writer::set_u32(const std::string& key, uint32_t x) {
  Value v;
  v.type = ValueType::u32;
  v.u = x;
  set(key, std::move(v));
}

void Writer::set_f32(const std::string& key, float x) {
  Value v;
  v.type = ValueType::f32;
  v.f = x;
  set(key, std::move(v));
}

void Writer::set_bool(const std::string& key, bool x) {
  Value v;
  v.type = ValueType::boolean;
  v.u = x ? 1 : 0;
  set(key, std::move(v));
}

void Writer::remove(const std::string& key) {
  for (auto it = kv_.begin(); it != kv_.end(); ++it) {
    if (it->first == key) {
      kv_.erase(it);
      return;
    }
  }
}

const Value* Writer::find(const std::string& key) const {
  for (const auto& [k, v] : kv_) if (k == key) return &v;
  return nullptr;
}

uint64_t Writer::alignment() const {
  const Value* a = find("general.alignment");
  if (!a) return 32;
  if (a->type != ValueType::u32 || a->u == 0 || (a->u & (a->u - 1)) != 0) {
    throw Error("", "general.alignment", "general.alignment must be a u32 power of two", "a power of two",
                a->type == ValueType::u32 ? std::to_string(a->u) : value_type_name(a->type));
  }
  return a->u;
}

void Writer::check(const Tensor& t) const {
  if (t.ne.empty() || t.ne.size() > 4) {
    throw Error("", t.name, "tensor dimension count out of range", "1..4", std::to_string(t.ne.size()));
  }
  int64_t rows = 1;
  for (size_t d = 1; d < t.ne.size(); ++d) {
    if (t.ne[d] <= 0) throw Error("", t.name, "tensor dimension out of range", ">= 1", std::to_string(t.ne[d]));
    rows *= t.ne[d];
  }
  if (t.ne[0] <= 0) throw Error("", t.name, "tensor dimension out of range", ">= 1", std::to_string(t.ne[0]));
  if (!ggml_type_info(t.type)) throw Error("", t.name, "unknown ggml tensor type", "a known type id", std::to_string(t.type));
  const uint64_t want = static_cast<uint64_t>(ggml_row_bytes(t.type, t.ne[0]) * rows);
  if (want != t.nbytes) {
    throw Error("", t.name, "tensor bytes do not match type x shape", std::to_string(want) + " bytes",
                std::to_string(t.nbytes) + " bytes");
  }
}

void Writer::add_tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, const void* data,
                        uint64_t nbytes) {
  Tensor t{name, std::move(ne), type, nbytes, data, nullptr};
  check(t);
  for (const auto& o : tensors_) if (o.name == name) throw Error("", name, "duplicate tensor name", "unique names", name);
  tensors_.push_back(std::move(t));
}

void Writer::add_tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t nbytes,
                        std::function<void(uint8_t* dst)> produce) {
  Tensor t{name, std::move(ne), type, nbytes, nullptr, std::move(produce)};
  check(t);
  for (const auto& o : tensors_) if (o.name == name) throw Error("", name, "duplicate tensor name", "unique names", name);
  tensors_.push_back(std::move(t));
}

std::vector<uint8_t> Writer::header() const {
  const uint64_t align = alignment();
  Out o;
  o.put<uint32_t>(0x46554747u);  // "GGUF" little-endian
  o.put<uint32_t>(3);
  o.put<uint64_t>(tensors_.size());
  o.put<uint64_t>(kv_.size());
  for (const auto& [k, v] : kv_) {
    o.str(k);
    o.put<uint32_t>(static_cast<uint32_t>(v.type));
    put_value(o, v, k);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    o.str(t.name);
    o.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) o.put<uint64_t>(static_cast<uint64_t>(d));
    o.put<uint32_t>(t.type);
    o.put<uint64_t>(offset);
    offset += pad(t.nbytes, align);
  }
  o.b.resize(pad(o.b.size(), align), 0);
  return std::move(o.b);
}

std::vector<uint8_t> Writer::serialize() const {
  const uint64_t align = alignment();
  std::vector<uint8_t> out = header();
  for (const auto& t : tensors_) {
    const size_t at = out.size();
    out.resize(at + t.nbytes);
    if (t.produce) {
      t.produce(out.data() + at);
    } else if (t.nbytes) {
      std::memcpy(out.data() + at, t.data, t.nbytes);
    }
    out.resize(pad(out.size(), align), 0);
  }
  return out;
}

void Writer::write(const std::string& path, const std::function<void(const std::string&)>& before_commit) const {
  const uint64_t align = alignment();
  std::vector<uint8_t> h;
  try {
    h = header();
  } catch (const Error& e) {
    throw Error(path, e.tensor(), e.rule(), e.expected(), e.found());
  }
  AtomicFile f(path);
  f.write(h.data(), h.size());
  std::vector<uint8_t> buf;
  size_t done = 0;
  for (const auto& t : tensors_) {
    if (t.produce) {
      buf.assign(t.nbytes, 0);
      t.produce(buf.data());
      f.write(buf.data(), buf.size());
    } else {
      f.write(t.data, t.nbytes);
    }
    f.zeros(pad(t.nbytes, align) - t.nbytes);
    if (progress) progress(++done, tensors_.size());
  }
  if (before_commit) {
    f.sync();
    before_commit(f.temp_path());
  }
  f.commit();
}

}  // namespace nvfp4::gguf

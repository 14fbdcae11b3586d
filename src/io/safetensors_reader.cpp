// safetensors reader. Every rule of the format is checked before a tensor is handed out:
// the header length fits the file, the header is a JSON object (no duplicate keys at any level)
// starting with '{', each entry names a known dtype, a shape of non-negative integers and two
// offsets with end - begin == elements x dtype size, and the entries, sorted by offset, tile the
// byte buffer exactly: first at 0, each starting where the previous ended, the last ending at the
// end of the file (what the format's reference implementation requires).
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/safetensors.h"

namespace nvfp4::safetensors {

namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // the reference implementation's limit
constexpr size_t kMaxJsonDepth = 16;

struct DtypeRow {
  Dtype d;
  const char* name;
  int bits;
};
constexpr DtypeRow kDtypes[] = {
    {Dtype::BOOL, "BOOL", 8},        {Dtype::F4, "F4", 4},           {Dtype::F6_E2M3, "F6_E2M3", 6},
    {Dtype::F6_E3M2, "F6_E3M2", 6},  {Dtype::U8, "U8", 8},           {Dtype::I8, "I8", 8},
    {Dtype::F8_E5M2, "F8_E5M2", 8},  {Dtype::F8_E4M3, "F8_E4M3", 8}, {Dtype::F8_E8M0, "F8_E8M0", 8},
    {Dtype::I16, "I16", 16},         {Dtype::U16, "U16", 16},        {Dtype::F16, "F16", 16},
    {Dtype::BF16, "BF16", 16},       {Dtype::I32, "I32", 32},        {Dtype::U32, "U32", 32},
    {Dtype::F32, "F32", 32},         {Dtype::C64, "C64", 64},        {Dtype::F64, "F64", 64},
    {Dtype::I64, "I64", 64},         {Dtype::U64, "U64", 64},
};

std::string json_type(const nlohmann::json& j) { return j.type_name(); }

// A non-negative integer that fits in 63 bits, or nullopt.
std::optional<uint64_t> as_count(const nlohmann::json& j) {
  if (j.is_number_unsigned()) {
    const auto v = j.get<uint64_t>();
    if (v < (uint64_t{1} << 62)) return v;
    return std::nullopt;
  }
  if (j.is_number_integer()) {
    const auto v = j.get<int64_t>();
    if (v >= 0) return static_cast<uint64_t>(v);
  }
  return std::nullopt;
}

}  // namespace

const char* dtype_name(Dtype d) {
  for (const auto& r : kDtypes) if (r.d == d) return r.name;
  return "unknown";
}

std::optional<Dtype> dtype_from_name(const std::string& s) {
  for (const auto& r : kDtypes) if (s == r.name) return r.d;
  return std::nullopt;
}

int dtype_bits(Dtype d) {
  for (const auto& r : kDtypes) if (r.d == d) return r.bits;
  return 0;
}

bool dtype_is_float(Dtype d) {
  switch (d) {
    case Dtype::F32: case Dtype::F16: case Dtype::BF16: case Dtype::F64: case Dtype::F8_E4M3:
    case Dtype::F8_E5M2: return true;
    default: return false;
  }
}

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

File File::open(const std::string& path) {
  auto map = std::make_shared<MappedFile>(path);
  File f = parse(map->data(), map->size(), path);
  f.map_ = std::move(map);
  return f;
}

File File::parse(const uint8_t* data, size_t size, const std::string& name) {
  File f;
  f.path_ = name;
  if (size < 8) {
    throw Error(name, "", "truncated file: no header length", "at least 8 bytes", std::to_string(size) + " bytes");
  }
  uint64_t n = 0;
  std::memcpy(&n, data, 8);
  if (n > size - 8) {
    throw Error(name, "", "header length runs past the end of the file",
                "at most " + std::to_string(size - 8), std::to_string(n));
  }
  if (n > kMaxHeader) {
    throw Error(name, "", "header too large", "at most " + std::to_string(kMaxHeader) + " bytes", std::to_string(n));
  }
  if (n == 0 || data[8] != '{') {
    throw Error(name, "", "header does not start with '{'", "a JSON object", n == 0 ? "an empty header" : "other bytes");
  }
  f.header_size_ = n;
  const char* hb = reinterpret_cast<const char*>(data + 8);

  // The callback tracks the keys of every open object to refuse duplicates (the JSON library
  // would keep the last one silently) and bounds the nesting depth.
  std::vector<std::unordered_set<std::string>> open;
  std::string duplicate;
  bool too_deep = false;
  auto cb = [&](int /*depth*/, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) {
      open.emplace_back();
      if (open.size() > kMaxJsonDepth) too_deep = true;
    } else if (ev == E::object_end) {
      if (!open.empty()) open.pop_back();
    } else if (ev == E::key && !open.empty()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!open.back().insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(hb, hb + n, cb);
  } catch (const nlohmann::json::exception& e) {
    throw Error(name, "", "header is not valid JSON", "a JSON object", e.what());
  }
  if (too_deep) throw Error(name, "", "header nested too deep", "at most " + std::to_string(kMaxJsonDepth) + " levels", "more");
  if (!duplicate.empty()) throw Error(name, duplicate, "duplicate name in the header", "unique names", "'" + duplicate + "' twice");
  if (!header.is_object()) throw Error(name, "", "header is not a JSON object", "an object", json_type(header));

  const uint64_t buffer = size - 8 - n;
  const uint8_t* base = data + 8 + n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) throw Error(name, "", "__metadata__ is not an object", "an object of strings", json_type(v));
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) {
          throw Error(name, "", "__metadata__ value is not a string", "'" + m.key() + "': a string", json_type(m.value()));
        }
        f.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) throw Error(name, key, "tensor entry is not an object", "an object", json_type(v));
    TensorInfo t;
    t.name = key;
    const auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) throw Error(name, key, "tensor entry has no dtype string", "\"dtype\": a string", dt == v.end() ? "absent" : json_type(*dt));
    const auto d = dtype_from_name(dt->get<std::string>());
    if (!d) throw Error(name, key, "unknown dtype", "a safetensors dtype", "'" + dt->get<std::string>() + "'");
    t.dtype = *d;
    const auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) throw Error(name, key, "tensor entry has no shape array", "\"shape\": an array", sh == v.end() ? "absent" : json_type(*sh));
    if (sh->size() > 8) throw Error(name, key, "too many dimensions", "at most 8", std::to_string(sh->size()));
    uint64_t elements = 1;
    for (const auto& e : *sh) {
      const auto c = as_count(e);
      if (!c || *c > (uint64_t{1} << 48)) throw Error(name, key, "shape entry is not a non-negative integer below 2^48", "0..2^48", e.dump());
      if (*c != 0 && elements > (uint64_t{1} << 48) / *c) throw Error(name, key, "tensor has too many elements", "at most 2^48", "more");
      elements *= *c;
      t.shape.push_back(static_cast<int64_t>(*c));
    }
    const auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2) {
      throw Error(name, key, "tensor entry has no [begin, end] data_offsets", "\"data_offsets\": [begin, end]", off == v.end() ? "absent" : off->dump());
    }
    const auto b = as_count((*off)[0]), e = as_count((*off)[1]);
    if (!b || !e) throw Error(name, key, "data_offsets are not non-negative integers", "[begin, end]", off->dump());
    t.begin = *b;
    t.end = *e;
    if (t.end < t.begin) throw Error(name, key, "data_offsets end before they begin", "begin <= end", off->dump());
    const uint64_t bits = elements * static_cast<uint64_t>(dtype_bits(t.dtype));
    if (bits % 8 != 0) throw Error(name, key, "sub-byte tensor does not fill whole bytes", "elements x bits % 8 == 0", std::to_string(bits) + " bits");
    if (t.end - t.begin != bits / 8) {
      throw Error(name, key, "shape and dtype do not match the data_offsets", std::to_string(bits / 8) + " bytes (" + dtype_name(t.dtype) + " x " + std::to_string(elements) + ")",
                  std::to_string(t.end - t.begin) + " bytes");
    }
    if (t.end > buffer) {
      throw Error(name, key, "data_offsets run past the end of the file", "end <= " + std::to_string(buffer), std::to_string(t.end));
    }
    t.data = base + t.begin;
    f.tensors_.push_back(std::move(t));
  }
  std::sort(f.tensors_.begin(), f.tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  const TensorInfo* prev = nullptr;
  for (const auto& t : f.tensors_) {
    if (t.begin < at) {
      throw Error(name, t.name, "tensor data overlaps another tensor", "begin >= " + std::to_string(at) + " (end of '" + prev->name + "')", std::to_string(t.begin));
    }
    if (t.begin > at) {
      throw Error(name, t.name, "gap in the byte buffer before a tensor", "begin == " + std::to_string(at), std::to_string(t.begin));
    }
    at = t.end;
    prev = &t;
  }
  if (at != buffer) {
    throw Error(name, "", "tensors do not cover the byte buffer", std::to_string(buffer) + " bytes of tensor data", std::to_string(at) + " bytes");
  }
  return f;
}

void File::drop(const void* p, size_t n) const {
  if (map_) map_->drop(p, n);
}

void File::drop_all() const {
  if (map_) map_->drop_all();
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

void to_float(const TensorInfo& t, float* out, const std::string& file) {
  const int64_t n = t.elements();
  const uint8_t* p = t.data;
  switch (t.dtype) {
    case Dtype::F32: if (n > 0) std::memcpy(out, p, static_cast<size_t>(n) * 4); return;
    case Dtype::F64:
      for (int64_t i = 0; i < n; ++i) { double d; std::memcpy(&d, p + 8 * i, 8); out[i] = static_cast<float>(d); }
      return;
    case Dtype::F16:
      for (int64_t i = 0; i < n; ++i) { uint16_t h; std::memcpy(&h, p + 2 * i, 2); out[i] = half_to_float(h); }
      return;
    case Dtype::BF16:
      for (int64_t i = 0; i < n; ++i) { uint16_t h; std::memcpy(&h, p + 2 * i, 2); out[i] = bf16_to_float(h); }
      return;
    case Dtype::F8_E4M3:
      for (int64_t i = 0; i < n; ++i) out[i] = e4m3_to_float(p[i]);
      return;
    case Dtype::F8_E5M2:  // E5M2 is the upper byte of an IEEE half
      for (int64_t i = 0; i < n; ++i) out[i] = half_to_float(static_cast<uint16_t>(p[i] << 8));
      return;
    case Dtype::I64:
    case Dtype::I32:  // indices (Checkpoint::OpenOptions::index_tensors): exact in float below 2^24
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = 0;
        if (t.dtype == Dtype::I64) {
          std::memcpy(&v, p + 8 * i, 8);
        } else {
          int32_t w = 0;
          std::memcpy(&w, p + 4 * i, 4);
          v = w;
        }
        if (v <= -(int64_t{1} << 24) || v >= (int64_t{1} << 24))
          throw Error(file, t.name, "an index tensor's value (exact in float)", "|v| < 2^24", std::to_string(v));
        out[i] = static_cast<float>(v);
      }
      return;
    default:
      throw Error(file, t.name, "tensor is not of a float dtype", "F32, F16, BF16, F64, F8_E4M3 or F8_E5M2", dtype_name(t.dtype));
  }
}

}  // namespace nvfp4::safetensors

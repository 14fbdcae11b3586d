// GGUF metadata values: the typed accessors of a Value, and an Array's elements kept by element
// type (fixed-size elements as their little-endian bytes, strings in one pool).
#include <cstring>
#include <limits>

#include "nvfp4/error.h"
#include "nvfp4/gguf.h"

namespace nvfp4::gguf {

namespace {

Error wrong_type(const std::string& key, const char* expected, ValueType found) {
  return Error("", key, "metadata '" + key + "' has the wrong type", expected, value_type_name(found));
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void store(std::vector<uint8_t>& b, T v) {
  const size_t at = b.size();
  b.resize(at + sizeof(T));
  std::memcpy(b.data() + at, &v, sizeof(T));
}

}  // namespace

const char* value_type_name(ValueType t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  const auto k = static_cast<uint32_t>(t);
  return k <= 12 ? names[k] : "unknown";
}

Value u32_value(uint64_t x) {
  Value v;
  v.type = ValueType::u32;
  v.u = x;
  return v;
}

Value bool_value(bool b) {
  Value v;
  v.type = ValueType::boolean;
  v.u = b ? 1 : 0;
  return v;
}

Value text_value(const std::string& s) {
  Value v;
  v.type = ValueType::string;
  v.s = s;
  return v;
}

Value u32_array_value(const std::vector<int64_t>& xs) {
  Value v;
  v.type = ValueType::array;
  v.arr = Array(ValueType::u32);
  for (int64_t x : xs) v.arr.push_back(u32_value(static_cast<uint64_t>(x)));
  return v;
}

size_t fixed_size(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
    case ValueType::string: case ValueType::array: return 0;
  }
  return 0;
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::u8: case ValueType::u16: case ValueType::u32: case ValueType::u64:
    case ValueType::i8: case ValueType::i16: case ValueType::i32: case ValueType::i64: return true;
    default: return false;
  }
}

int64_t Value::as_int(const std::string& key) const {
  if (!is_integer()) throw wrong_type(key, "an integer", type);
  switch (type) {
    case ValueType::u8: case ValueType::u16: case ValueType::u32: case ValueType::u64:
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        throw Error("", key, "metadata '" + key + "' is out of range", "< 2^63", std::to_string(u));
      }
      return static_cast<int64_t>(u);
    default: return i;
  }
}

double Value::as_float(const std::string& key) const {
  if (type == ValueType::f32 || type == ValueType::f64) return f;
  return static_cast<double>(as_int(key));
}

const std::string& Value::as_string(const std::string& key) const {
  if (type != ValueType::string) throw wrong_type(key, "a string", type);
  return s;
}

bool Value::as_bool(const std::string& key) const {
  if (type != ValueType::boolean) throw wrong_type(key, "a bool", type);
  return u != 0;
}

Array::Array() = default;
Array::Array(ValueType elem) : elem_(elem) {}
Array::~Array() = default;
Array::Array(const Array&) = default;
Array::Array(Array&&) noexcept = default;
Array& Array::operator=(const Array&) = default;
Array& Array::operator=(Array&&) noexcept = default;

Value Array::at(size_t i, const std::string& key) const {
  if (i >= n_) {
    throw Error("", key, "metadata '" + key + "': array index out of range", "< " + std::to_string(n_), std::to_string(i));
  }
  Value v;
  v.type = elem_;
  const uint8_t* p = raw_.data() + i * fixed_size(elem_);
  switch (elem_) {
    case ValueType::u8: v.u = load<uint8_t>(p); break;
    case ValueType::i8: v.i = load<int8_t>(p); break;
    case ValueType::u16: v.u = load<uint16_t>(p); break;
    case ValueType::i16: v.i = load<int16_t>(p); break;
    case ValueType::u32: v.u = load<uint32_t>(p); break;
    case ValueType::i32: v.i = load<int32_t>(p); break;
    case ValueType::u64: v.u = load<uint64_t>(p); break;
    case ValueType::i64: v.i = load<int64_t>(p); break;
    case ValueType::f32: v.f = load<float>(p); break;
    case ValueType::f64: v.f = load<double>(p); break;
    case ValueType::boolean: v.u = load<uint8_t>(p); break;
    case ValueType::string: v.s = std::string(str(i, key)); break;
    case ValueType::array: return nested_[i];
  }
  return v;
}

std::string_view Array::str(size_t i, const std::string& key) const {
  if (elem_ != ValueType::string) throw wrong_type(key, "a string", elem_);
  if (i >= n_) {
    throw Error("", key, "metadata '" + key + "': array index out of range", "< " + std::to_string(n_), std::to_string(i));
  }
  const uint64_t begin = i == 0 ? 0 : ends_[i - 1];
  return {reinterpret_cast<const char*>(raw_.data()) + begin, static_cast<size_t>(ends_[i] - begin)};
}

int64_t Array::as_int(size_t i, const std::string& key) const {
  if (fixed_size(elem_) == 0) throw wrong_type(key, "an integer", elem_);  // no string copied to say so
  return at(i, key).as_int(key);
}

double Array::as_float(size_t i, const std::string& key) const {
  if (fixed_size(elem_) == 0) throw wrong_type(key, "an integer", elem_);
  return at(i, key).as_float(key);
}

void Array::push_back(const Value& e, const std::string& key) {
  if (e.type != elem_) {
    throw Error("", key, "metadata '" + key + "': array element of the wrong type", value_type_name(elem_),
                value_type_name(e.type));
  }
  switch (elem_) {
    case ValueType::u8: store<uint8_t>(raw_, static_cast<uint8_t>(e.u)); break;
    case ValueType::i8: store<int8_t>(raw_, static_cast<int8_t>(e.i)); break;
    case ValueType::u16: store<uint16_t>(raw_, static_cast<uint16_t>(e.u)); break;
    case ValueType::i16: store<int16_t>(raw_, static_cast<int16_t>(e.i)); break;
    case ValueType::u32: store<uint32_t>(raw_, static_cast<uint32_t>(e.u)); break;
    case ValueType::i32: store<int32_t>(raw_, static_cast<int32_t>(e.i)); break;
    case ValueType::u64: store<uint64_t>(raw_, e.u); break;
    case ValueType::i64: store<int64_t>(raw_, e.i); break;
    case ValueType::f32: store<float>(raw_, static_cast<float>(e.f)); break;
    case ValueType::f64: store<double>(raw_, e.f); break;
    case ValueType::boolean: store<uint8_t>(raw_, e.u ? 1 : 0); break;
    case ValueType::string: push_string(e.s); return;
    case ValueType::array: nested_.push_back(e); break;
  }
  ++n_;
}

void Array::push_string(std::string_view s) {
  if (elem_ != ValueType::string) {
    throw Error("", "metadata array", "metadata array: element of the wrong type", value_type_name(elem_), "string");
  }
  raw_.insert(raw_.end(), s.begin(), s.end());
  ends_.push_back(raw_.size());
  ++n_;
}

void Array::append_raw(const uint8_t* p, size_t n, const std::string& key) {
  const size_t w = fixed_size(elem_);
  if (w == 0) {
    throw Error("", key, "metadata '" + key + "': raw bytes for an array of variable-size elements",
                "a fixed-size element type", value_type_name(elem_));
  }
  if (elem_ == ValueType::boolean) {
    for (size_t k = 0; k < n; ++k) {
      if (p[k] > 1) throw Error("", key, "metadata '" + key + "': bool must be 0 or 1", "0 or 1", std::to_string(p[k]));
    }
  }
  raw_.insert(raw_.end(), p, p + n * w);
  n_ += n;
}

void Array::reserve(size_t n, size_t string_bytes) {
  switch (elem_) {
    case ValueType::string:
      raw_.reserve(string_bytes);
      ends_.reserve(n);
      break;
    case ValueType::array: nested_.reserve(n); break;
    default: raw_.reserve(n * fixed_size(elem_)); break;
  }
}

size_t Array::heap_bytes() const {
  size_t b = raw_.capacity() + ends_.capacity() * sizeof(uint64_t) + nested_.capacity() * sizeof(Value);
  for (const Value& v : nested_) b += v.arr.heap_bytes();
  return b;
}

bool Array::operator==(const Array& o) const {
  if (elem_ != o.elem_ || n_ != o.n_ || raw_ != o.raw_ || ends_ != o.ends_ || nested_.size() != o.nested_.size()) return false;
  for (size_t k = 0; k < nested_.size(); ++k) {
    if (!(nested_[k].arr == o.nested_[k].arr)) return false;
  }
  return true;
}

}  // namespace nvfp4::gguf

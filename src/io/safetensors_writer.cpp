// safetensors writer, laid out as the format's reference implementation lays files out:
// tensors sorted by dtype (descending in the format's dtype order, i.e. widest first) then by
// name, packed without gaps; the JSON header compact, "__metadata__" first, padded with spaces to a
// multiple of 8 bytes.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "nvfp4/atomic_file.h"
#include "nvfp4/error.h"
#include "nvfp4/safetensors.h"

namespace nvfp4::safetensors {

namespace {

struct Plan {
  std::string header;  // padded
  std::vector<const WriteTensor*> order;
};

Plan plan(const std::vector<WriteTensor>& tensors, const std::map<std::string, std::string>& metadata,
          const std::string& file) {
  Plan p;
  std::set<std::string> names;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__") throw Error(file, t.name, "tensor name reserved by the format", "another name", t.name);
    if (!names.insert(t.name).second) throw Error(file, t.name, "duplicate tensor name", "unique names", t.name);
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0) throw Error(file, t.name, "negative dimension", ">= 0", std::to_string(d));
      elements *= static_cast<uint64_t>(d);
    }
    const uint64_t bits = elements * static_cast<uint64_t>(dtype_bits(t.dtype));
    if (bits % 8 != 0 || bits / 8 != t.nbytes) {
      throw Error(file, t.name, "tensor bytes do not match dtype x shape",
                  std::to_string(bits / 8) + " bytes", std::to_string(t.nbytes) + " bytes");
    }
    if (t.nbytes > 0 && !t.data) throw Error(file, t.name, "tensor has no data", "a buffer", "null");
    p.order.push_back(&t);
  }
  std::stable_sort(p.order.begin(), p.order.end(), [](const WriteTensor* a, const WriteTensor* b) {
    if (a->dtype != b->dtype) return static_cast<int>(a->dtype) > static_cast<int>(b->dtype);
    return a->name < b->name;
  });
  std::string h = "{";
  bool first = true;
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool mf = true;
    for (const auto& [k, v] : metadata) {
      if (!mf) h += ",";
      mf = false;
      h += nlohmann::json(k).dump() + ":" + nlohmann::json(v).dump();
    }
    h += "}";
    first = false;
  }
  uint64_t at = 0;
  for (const WriteTensor* t : p.order) {
    if (!first) h += ",";
    first = false;
    h += nlohmann::json(t->name).dump() + ":{\"dtype\":\"" + dtype_name(t->dtype) + "\",\"shape\":[";
    for (size_t k = 0; k < t->shape.size(); ++k) {
      if (k) h += ',';
      h += std::to_string(t->shape[k]);
    }
    h += "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + t->nbytes) + "]}";
    at += t->nbytes;
  }
  h += "}";
  h.append((8 - h.size() % 8) % 8, ' ');
  p.header = std::move(h);
  return p;
}

}  // namespace

std::vector<uint8_t> serialize(const std::vector<WriteTensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  const Plan p = plan(tensors, metadata, "");
  size_t total = 8 + p.header.size();
  for (const WriteTensor* t : p.order) total += t->nbytes;
  std::vector<uint8_t> out(total);
  const uint64_t n = p.header.size();
  for (int k = 0; k < 8; ++k) out[k] = static_cast<uint8_t>(n >> (8 * k));
  std::memcpy(out.data() + 8, p.header.data(), p.header.size());
  size_t at = 8 + p.header.size();
  for (const WriteTensor* t : p.order) {
    if (t->nbytes) std::memcpy(out.data() + at, t->data, t->nbytes);
    at += t->nbytes;
  }
  return out;
}

void write(const std::string& path, const std::vector<WriteTensor>& tensors,
           const std::map<std::string, std::string>& metadata) {
  const Plan p = plan(tensors, metadata, path);
  AtomicFile f(path);
  uint8_t len[8];
  const uint64_t n = p.header.size();
  for (int k = 0; k < 8; ++k) len[k] = static_cast<uint8_t>(n >> (8 * k));
  f.write(len, 8);
  f.write(p.header.data(), p.header.size());
  for (const WriteTensor* t : p.order) f.write(t->data, t->nbytes);
  f.commit();
}

}  // namespace nvfp4::safetensors

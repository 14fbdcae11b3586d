// A fixture checkpoint's variants for tests of what the loader refuses or honours: its
// safetensors tensors changed by an edit and written, with its JSON files, into a scratch
// directory (test_mixed_checkpoints.cpp, test_kv_fp8.cpp).
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "io_test_util.h"
#include "nvfp4/safetensors.h"
#include "test_util.h"

namespace nvfp4::test::stv {

namespace st = nvfp4::safetensors;
namespace fs = std::filesystem;

// name -> (dtype, (shape, bytes))
using Tensors = std::map<std::string, std::pair<st::Dtype, std::pair<std::vector<int64_t>, std::vector<uint8_t>>>>;

// The fixture `from`'s tensors, changed by `edit`, written with its JSON files into `out`.
inline std::string variant(const std::string& out, const std::function<void(Tensors&)>& edit, const std::string& from) {
  const std::string src = test::fixture_path(from);
  Tensors t;
  const auto f = st::File::open(src + "/model.safetensors");
  for (const auto& x : f.tensors()) t[x.name] = {x.dtype, {x.shape, std::vector<uint8_t>(x.data, x.data + x.nbytes())}};
  edit(t);
  fs::create_directories(out);
  std::vector<st::WriteTensor> w;
  for (const auto& [n, x] : t) w.push_back({n, x.first, x.second.first, x.second.second.data(), x.second.second.size()});
  st::write(out + "/model.safetensors", w);
  for (const char* j : {"config.json", "hf_quant_config.json", "tokenizer.json", "tokenizer_config.json"})
    if (fs::exists(src + "/" + j)) fs::copy_file(src + "/" + j, out + "/" + j, fs::copy_options::overwrite_existing);
  return out;
}

// Multiplies the one-float tensor `name` by `by`.
inline void scale_f32(Tensors& t, const std::string& name, float by) {
  auto& b = t.at(name).second.second;
  ASSERT_EQ(b.size(), 4u) << name;
  float v;
  std::memcpy(&v, b.data(), 4);
  v *= by;
  std::memcpy(b.data(), &v, 4);
}

// A scratch directory removed with everything in it.
struct Tree {
  test::ScratchDir d;
  ~Tree() {
    std::error_code ec;
    for (const auto& e : d.entries()) fs::remove_all(d / e, ec);
  }
};

}  // namespace nvfp4::test::stv

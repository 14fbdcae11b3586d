// libFuzzer target for the safetensors reader: any input is either parsed or refused with
// nvfp4::Error; a parsed file's tensors lie inside the input (touched here so that ASan sees any
// out-of-bounds view) and float tensors convert without a crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "nvfp4/error.h"
#include "nvfp4/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace st = nvfp4::safetensors;
  try {
    const auto f = st::File::parse(data, size, "fuzz.safetensors");
    volatile uint8_t sink = 0;
    for (const auto& t : f.tensors()) {
      for (int64_t i = 0; i < t.nbytes(); ++i) sink = sink ^ t.data[i];
      if (st::dtype_is_float(t.dtype) && t.elements() <= 65536) {
        std::vector<float> v(static_cast<size_t>(t.elements()));
        st::to_float(t, v.data());
      }
    }
    // What we parsed must serialize and parse again to the same tensors.
    std::vector<st::WriteTensor> w;
    for (const auto& t : f.tensors()) w.push_back({t.name, t.dtype, t.shape, t.data, static_cast<size_t>(t.nbytes())});
    const auto again = st::serialize(w, f.metadata());
    const auto g = st::File::parse(again.data(), again.size(), "again");
    if (g.tensors().size() != f.tensors().size()) __builtin_trap();
  } catch (const nvfp4::Error&) {
  }
  return 0;
}

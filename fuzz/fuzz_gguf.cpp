// libFuzzer target for the GGUF reader: any input is either parsed or refused with nvfp4::Error;
// a parsed file's tensor bytes are all inside the input (touched here so that ASan sees any
// out-of-bounds view) and decode without a crash; its metadata, array elements included, reads back
// and rewrites to equal arrays.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"
#include "nvfp4/gguf_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto f = nvfp4::gguf::File::parse(data, size, "fuzz.gguf");
    volatile uint8_t sink = 0;
    for (const auto& t : f.tensors()) {
      for (int64_t i = 0; i < t.nbytes; ++i) sink = sink ^ t.data[i];
      const nvfp4::GgmlTypeInfo* ti = nvfp4::ggml_type_info(t.type);
      if (ti && ti->dequantizable && t.ne[0] <= 4096) {
        std::vector<float> row(static_cast<size_t>(t.ne[0]));
        try {
          nvfp4::ggml_dequantize_row(t.type, t.data, row.data(), t.ne[0]);
        } catch (const nvfp4::Error&) {
        }
      }
    }
    for (const auto& [k, v] : f.metadata()) {
      (void)k;
      if (v.type == nvfp4::gguf::ValueType::string) sink = sink ^ static_cast<uint8_t>(v.s.size());
      if (v.type == nvfp4::gguf::ValueType::array) {  // every element read back (ASan sees the pool)
        for (size_t e = 0; e < v.arr.size(); ++e) sink = sink ^ static_cast<uint8_t>(v.arr.at(e).s.size());
      }
    }
    // The metadata rewrites to the bytes it was read from (tensor infos aside).
    nvfp4::gguf::Writer w;
    for (const auto& [k, v] : f.metadata()) w.set(k, v);
    const std::vector<uint8_t> again = w.serialize();
    const auto g = nvfp4::gguf::File::parse(again.data(), again.size(), "again.gguf");
    if (g.metadata().size() != f.metadata().size()) __builtin_trap();
    for (size_t k = 0; k < f.metadata().size(); ++k) {
      if (!(g.metadata()[k].second.arr == f.metadata()[k].second.arr)) __builtin_trap();
    }
  } catch (const nvfp4::Error&) {
  }
  return 0;
}

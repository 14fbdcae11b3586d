// libFuzzer target for config.json translation (src/io/hf_config.cpp), the hybrids' keys included
// (layer_types, linear_*, partial_rotary_factor, a VLM release's text_config): any input is
// either not JSON, or translated, or refused with nvfp4::Error; never a crash. A translated
// config's values are read back as GGUF values would be.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/hf_config.h"
#include "nvfp4/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    const nvfp4::MetaList meta = nvfp4::hf_config_meta(j, "fuzz/config.json");
    volatile size_t sink = 0;
    for (const auto& [key, v] : meta) sink = sink + key.size() + static_cast<size_t>(v.type);
    (void)nvfp4::hf_config_arch(j);
  } catch (const nvfp4::Error&) {
  }
  return 0;
}

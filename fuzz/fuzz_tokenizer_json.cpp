// libFuzzer target for the tokenizer.json reader: any input is either read or refused with
// nvfp4::Error; a tokenizer that builds encodes a fixed text (or, after a NUL byte in the input,
// the rest of the input) and decodes the ids without a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nvfp4/error.h"
#include "nvfp4/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string json = in.substr(0, nul);
  const std::string text = nul == std::string::npos
                               ? std::string("Hello world! <s> 123 'll \xE4\xBD\xA0\xE5\xA5\xBD e\xCC\x81 \t\r\n  x\xFF")
                               : in.substr(nul + 1);
  try {
    const auto tok = nvfp4::Tokenizer::build(nvfp4::tokenizer_data_from_json(json, "fuzz/tokenizer.json"));
    for (bool special : {true, false}) {
      const auto ids = tok.encode(text, special);
      volatile size_t sink = tok.decode(ids).size() + tok.decode(ids, true).size();
      (void)sink;
    }
  } catch (const nvfp4::Error&) {
  }
  return 0;
}

// libFuzzer target for the server's request parsing and text stream: any body is parsed as a
// completion, chat, tokenize and detokenize request, each either accepted or refused with
// ApiError 400; the same bytes, cut into tokens, go through a TextStream with stop strings, whose
// output must be valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/api_error.h"
#include "server/request.h"
#include "server/text_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nvfp4::server;
  const std::string body(reinterpret_cast<const char*>(data), size);
  for (int kind = 0; kind < 4; ++kind) {
    try {
      if (kind < 2) (void)parse_gen_request(body, kind == 1);
      else if (kind == 2) (void)parse_tokenize_request(body);
      else (void)parse_detokenize_request(body);
    } catch (const ApiError& e) {
      if (e.status != 400) std::abort();
      (void)error_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    }
  }
  TextStream t({"\n\n", "\xC3\xA9", "END"});
  std::string out;
  for (size_t i = 0; i < size; i += 3) out += t.push(body.substr(i, 3));
  out += t.finish();
  if (utf8_sanitize(out) != out) std::abort();  // not valid UTF-8
  return 0;
}

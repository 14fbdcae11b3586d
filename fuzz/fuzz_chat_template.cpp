// libFuzzer target for the chat-template interpreter: any input is a template that either parses
// and renders a fixed conversation or is refused with nvfp4::Error (syntax, unsupported construct,
// raise_exception, undefined use, limits). Small limits keep every input fast.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nvfp4/chat.h"
#include "nvfp4/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto t = nvfp4::ChatTemplate::parse(text, "fuzz.jinja");
    nvfp4::ChatRenderOptions o;
    o.bos_token = "<s>";
    o.eos_token = "</s>";
    o.vars["enable_thinking"] = false;
    o.date = nvfp4::ChatDate{2025, 3, 9};
    o.max_output = 1 << 16;
    o.max_steps = 200000;
    o.max_depth = 16;
    const std::vector<nvfp4::ChatMessage> msgs = {
        {"system", "Be brief."}, {"user", "h\xc3\xa9llo {{ x }} \"q\" 'q'\n"},
        {"assistant", "<think>\nr\n</think>\n\nok"}, {"user", "  again  "}};
    volatile size_t sink = t.render(msgs, o).size();
    o.add_generation_prompt = false;
    sink = sink + t.render({msgs[1]}, o).size();
    (void)sink;
  } catch (const nvfp4::Error&) {
  }
  return 0;
}

#include "io/tokenizer_gguf_writer.h"

namespace nvfp4 {

namespace {

gguf::Value string_array(const std::vector<std::string>& v) {
  gguf::Value a;
  a.type = gguf::ValueType::array;
  a.elem_type = gguf::ValueType::string;
  a.arr.reserve(v.size());
  for (const auto& s : v) {
    gguf::Value e;
    e.type = gguf::ValueType::string;
    e.s = s;
    a.arr.push_back(std::move(e));
  }
  return a;
}

gguf::Value i32_array(const std::vector<int32_t>& v) {
  gguf::Value a;
  a.type = gguf::ValueType::array;
  a.elem_type = gguf::ValueType::i32;
  a.arr.reserve(v.size());
  for (int32_t x : v) {
    gguf::Value e;
    e.type = gguf::ValueType::i32;
    e.i = x;
    a.arr.push_back(e);
  }
  return a;
}

}  // namespace

void write_tokenizer_gguf(const TokenizerData& d, gguf::Writer& w) {
  (void)Tokenizer::build(d);  // every rule of the runtime's loader, before anything is set
  w.set_string("tokenizer.ggml.model", d.model);
  w.set_string("tokenizer.ggml.pre", d.pre);
  w.set("tokenizer.ggml.tokens", string_array(d.tokens));
  if (!d.token_types.empty()) w.set("tokenizer.ggml.token_type", i32_array(d.token_types));
  if (!d.merges.empty()) w.set("tokenizer.ggml.merges", string_array(d.merges));
  const std::pair<const char*, int32_t> ids[] = {{"tokenizer.ggml.bos_token_id", d.bos},
                                                 {"tokenizer.ggml.eos_token_id", d.eos},
                                                 {"tokenizer.ggml.eot_token_id", d.eot},
                                                 {"tokenizer.ggml.unknown_token_id", d.unk},
                                                 {"tokenizer.ggml.padding_token_id", d.pad}};
  for (const auto& [key, id] : ids) {
    if (id >= 0) w.set_u32(key, static_cast<uint32_t>(id));
  }
  w.set_bool("tokenizer.ggml.add_bos_token", d.add_bos);
  if (!d.chat_template.empty()) w.set_string("tokenizer.chat_template", d.chat_template);
}

}  // namespace nvfp4

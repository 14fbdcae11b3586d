// Tokenizer data from a GGUF's tokenizer.ggml.* keys.
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4 {

namespace {
const gguf::Value& array_of(const gguf::File& f, const char* key, gguf::ValueType elem) {
  const gguf::Value& v = f.get(key);
  if (v.type != gguf::ValueType::array || (!v.arr.empty() && v.elem_type != elem))
    throw Error(f.path(), "", std::string("metadata '") + key + "' type",
                std::string("array of ") + gguf::value_type_name(elem),
                v.type == gguf::ValueType::array
                    ? std::string("array of ") + gguf::value_type_name(v.elem_type)
                    : gguf::value_type_name(v.type));
  return v;
}
int32_t opt_id(const gguf::File& f, const char* key) {
  const gguf::Value* v = f.find(key);
  if (!v) return -1;
  const int64_t id = v->as_int(key);
  if (id < -1 || id > INT32_MAX) throw Error(f.path(), "", std::string("metadata '") + key + "'",
                                             "a token id", std::to_string(id));
  return static_cast<int32_t>(id);
}
}  // namespace

Tokenizer Tokenizer::from_gguf(const gguf::File& f) {
  TokenizerData d;
  d.source = f.path();
  d.model = f.get("tokenizer.ggml.model").as_string("tokenizer.ggml.model");
  if (const auto* p = f.find("tokenizer.ggml.pre")) d.pre = p->as_string("tokenizer.ggml.pre");
  for (const auto& v : array_of(f, "tokenizer.ggml.tokens", gguf::ValueType::string).arr)
    d.tokens.push_back(v.s);
  if (const auto* tt = f.find("tokenizer.ggml.token_type")) {
    if (tt->type != gguf::ValueType::array)
      throw Error(f.path(), "", "metadata 'tokenizer.ggml.token_type' type", "array of integers",
                  gguf::value_type_name(tt->type));
    for (const auto& v : tt->arr)
      d.token_types.push_back(static_cast<int32_t>(v.as_int("tokenizer.ggml.token_type")));
  }
  if (f.find("tokenizer.ggml.merges"))
    for (const auto& v : array_of(f, "tokenizer.ggml.merges", gguf::ValueType::string).arr)
      d.merges.push_back(v.s);
  d.bos = opt_id(f, "tokenizer.ggml.bos_token_id");
  d.eos = opt_id(f, "tokenizer.ggml.eos_token_id");
  d.eot = opt_id(f, "tokenizer.ggml.eot_token_id");
  d.pad = opt_id(f, "tokenizer.ggml.padding_token_id");
  d.unk = opt_id(f, "tokenizer.ggml.unknown_token_id");
  if (const auto* v = f.find("tokenizer.ggml.add_bos_token")) d.add_bos = v->as_bool("tokenizer.ggml.add_bos_token");
  if (const auto* v = f.find("tokenizer.chat_template")) d.chat_template = v->as_string("tokenizer.chat_template");
  return build(std::move(d));
}

}  // namespace nvfp4

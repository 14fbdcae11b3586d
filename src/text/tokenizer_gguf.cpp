// Tokenizer data from GGUF-style tokenizer.ggml.* metadata: of a GGUF file, or of any checkpoint
// (Checkpoint::meta presents every container's metadata under these keys).
#include <filesystem>
#include <functional>

#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4 {

namespace {
using Lookup = std::function<const gguf::Value*(const std::string&)>;

const gguf::Value& need(const Lookup& find, const std::string& src, const std::string& key) {
  const gguf::Value* v = find(key);
  if (!v) throw Error(src, "", "missing tokenizer metadata '" + key + "'", "present", "absent");
  return *v;
}
const gguf::Value& array_of(const Lookup& find, const std::string& src, const std::string& key) {
  const gguf::Value& v = need(find, src, key);
  if (v.type != gguf::ValueType::array)
    throw Error(src, "", "metadata '" + key + "' type", "an array", gguf::value_type_name(v.type));
  return v;
}
int32_t opt_id(const Lookup& find, const std::string& src, const std::string& key) {
  const gguf::Value* v = find(key);
  if (!v) return -1;
  const int64_t id = v->as_int(key);
  if (id < -1 || id > INT32_MAX) throw Error(src, "", "metadata '" + key + "'", "a token id", std::to_string(id));
  return static_cast<int32_t>(id);
}

TokenizerData data_from_meta(const Lookup& find, const std::string& src) {
  TokenizerData d;
  d.source = src;
  d.model = need(find, src, "tokenizer.ggml.model").as_string("tokenizer.ggml.model");
  if (const auto* p = find("tokenizer.ggml.pre")) d.pre = p->as_string("tokenizer.ggml.pre");
  {
    const gguf::Array& a = array_of(find, src, "tokenizer.ggml.tokens").arr;
    d.tokens.reserve(a.size());
    for (size_t k = 0; k < a.size(); ++k) d.tokens.emplace_back(a.str(k, "tokenizer.ggml.tokens"));
  }
  if (find("tokenizer.ggml.token_type")) {
    const gguf::Array& a = array_of(find, src, "tokenizer.ggml.token_type").arr;
    d.token_types.reserve(a.size());
    for (size_t k = 0; k < a.size(); ++k) d.token_types.push_back(static_cast<int32_t>(a.as_int(k, "tokenizer.ggml.token_type")));
  }
  if (find("tokenizer.ggml.merges")) {
    const gguf::Array& a = array_of(find, src, "tokenizer.ggml.merges").arr;
    d.merges.reserve(a.size());
    for (size_t k = 0; k < a.size(); ++k) d.merges.emplace_back(a.str(k, "tokenizer.ggml.merges"));
  }
  d.bos = opt_id(find, src, "tokenizer.ggml.bos_token_id");
  d.eos = opt_id(find, src, "tokenizer.ggml.eos_token_id");
  d.eot = opt_id(find, src, "tokenizer.ggml.eot_token_id");
  d.pad = opt_id(find, src, "tokenizer.ggml.padding_token_id");
  d.unk = opt_id(find, src, "tokenizer.ggml.unknown_token_id");
  if (const auto* v = find("tokenizer.ggml.add_bos_token")) d.add_bos = v->as_bool("tokenizer.ggml.add_bos_token");
  if (const auto* v = find("tokenizer.chat_template")) d.chat_template = v->as_string("tokenizer.chat_template");
  if (find("tokenizer.ggml.scores")) {
    const gguf::Array& a = array_of(find, src, "tokenizer.ggml.scores").arr;
    d.scores.reserve(a.size());
    for (size_t k = 0; k < a.size(); ++k) d.scores.push_back(static_cast<float>(a.as_float(k, "tokenizer.ggml.scores")));
  }
  return d;
}
}  // namespace

// A metadata value's own errors (gguf::Value: the wrong type) name the key but not the file.
static TokenizerData data_naming_file(const Lookup& find, const std::string& src) {
  try {
    return data_from_meta(find, src);
  } catch (const Error& e) {
    if (!e.file().empty()) throw;
    throw Error(src, e.tensor(), e.rule(), e.expected(), e.found());
  }
}

TokenizerData tokenizer_data_from_gguf(const gguf::File& f) {
  return data_naming_file([&](const std::string& k) { return f.find(k); }, f.path());
}

TokenizerData tokenizer_data_from_checkpoint(const Checkpoint& ck) {
  // An HF directory (or the directory of the .safetensors file named): tokenizer.json and
  // friends; a GGUF: its tokenizer.ggml.* metadata.
  if (ck.info().container == "safetensors") {
    namespace fs = std::filesystem;
    const fs::path p(ck.info().path);
    return tokenizer_data_from_hf((fs::is_directory(p) ? p : p.parent_path()).string());
  }
  return data_naming_file([&](const std::string& k) { return ck.meta(k); }, ck.info().path);
}

void forget_tokenizer_arrays(Checkpoint& ck) {
  for (const char* k : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type", "tokenizer.ggml.scores"})
    ck.forget_meta(k);
}

Tokenizer Tokenizer::from_gguf(const gguf::File& f) { return Tokenizer::build(tokenizer_data_from_gguf(f)); }

Tokenizer Tokenizer::from_checkpoint(const Checkpoint& ck) { return Tokenizer::build(tokenizer_data_from_checkpoint(ck)); }

}  // namespace nvfp4

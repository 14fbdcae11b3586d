#include "convert/gguf_meta_from_checkpoint.h"

#include <cctype>
#include <filesystem>

#include "text/tokenizer_gguf_writer.h"
#include "nvfp4/arch.h"
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4 {

namespace {

namespace fs = std::filesystem;

fs::path hf_dir(const std::string& path) {
  if (fs::is_directory(path)) return path;
  const fs::path p = fs::path(path).parent_path();
  return p.empty() ? fs::path(".") : p;
}

double meta_num(const Checkpoint& ck, const std::string& key) {
  const gguf::Value* v = ck.meta(key);
  if (!v) throw Error(ck.info().path, "", "missing metadata '" + key + "' (llama3 rope scaling)", "present", "absent");
  return v->as_float(key);
}

// Llama 3 RoPE scaling: llama.cpp's converter writes no rope.scaling keys but a rope_freqs.weight
// tensor of the per-frequency divisors (and llama.cpp knows no "llama3" scaling type).
bool llama3_rope(const Checkpoint& ck, const std::string& arch, GgufFromHf& out) {
  const std::string a = arch + ".";
  const gguf::Value* t = ck.meta(a + "rope.scaling.type");
  if (!t || t->type != gguf::ValueType::string || t->s != "llama3") return false;
  int64_t head_dim = 0;
  if (const gguf::Value* k = ck.meta(a + "attention.key_length")) head_dim = k->as_int(a + "attention.key_length");
  if (head_dim <= 0) {
    const int64_t heads = static_cast<int64_t>(meta_num(ck, a + "attention.head_count"));
    head_dim = heads > 0 ? static_cast<int64_t>(meta_num(ck, a + "embedding_length")) / heads : 0;
  }
  if (head_dim <= 0 || head_dim % 2 != 0) {
    throw Error(ck.info().path, "rope_freqs.weight", "Llama 3 RoPE factors need an even head dimension", "head_dim > 0, even",
                std::to_string(head_dim));
  }
  const gguf::Value* base = ck.meta(a + "rope.freq_base");
  out.f32_tensors.emplace_back(
      "rope_freqs.weight",
      rope_freq_factors_llama3(head_dim, base ? base->as_float() : 10000.0, meta_num(ck, a + "rope.scaling.factor"),
                               meta_num(ck, a + "rope.scaling.low_freq_factor"), meta_num(ck, a + "rope.scaling.high_freq_factor"),
                               meta_num(ck, a + "rope.scaling.original_context_length")));
  return true;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace

GgufFromHf gguf_meta_from_checkpoint(const Checkpoint& ck, gguf::Writer& w, const std::string& tokenizer_gguf) {
  GgufFromHf out;
  const std::string& path = ck.info().path;
  const gguf::Value* a = ck.meta("general.architecture");
  if (!a || a->type != gguf::ValueType::string || a->s.empty()) {
    throw Error(path, "", "GGUF output needs the architecture", "config.json with model_type", "none");
  }
  const std::string arch = a->s;
  w.set_string("general.architecture", arch);
  const bool rope_freqs = llama3_rope(ck, arch, out);
  for (const std::string& k : ck.meta_keys()) {
    if (k == "general.architecture") continue;
    if (rope_freqs && starts_with(k, arch + ".rope.scaling.")) continue;  // in rope_freqs.weight
    if (starts_with(k, "general.") || starts_with(k, arch + ".")) w.set(k, *ck.meta(k));
  }

  const fs::path dir = hf_dir(path);
  const TensorEntry* emb = ck.find("token_embd.weight");
  const int64_t n_vocab = emb && !emb->shape.empty() ? emb->shape[0] : 0;
  auto put_tokenizer = [&](TokenizerData d) {
    const int64_t n = static_cast<int64_t>(d.tokens.size());
    if (n_vocab > 0 && n > n_vocab) {
      throw Error(d.source, "token_embd.weight", "the tokenizer has more tokens than the model's embedding has rows",
                  "at most " + std::to_string(n_vocab) + " tokens", std::to_string(n));
    }
    // As llama.cpp's converter: ids the tokenizer does not use become "[PAD<id>]", type unused.
    if (n < n_vocab) {
      if (d.token_types.empty()) d.token_types.assign(d.tokens.size(), static_cast<int32_t>(TokenType::normal));
      for (int64_t i = n; i < n_vocab; ++i) {
        d.tokens.push_back("[PAD" + std::to_string(i) + "]");
        d.token_types.push_back(static_cast<int32_t>(TokenType::unused));
      }
      out.notes.push_back("tokenizer padded from " + std::to_string(n) + " to " + std::to_string(n_vocab) + " tokens");
    }
    for (auto& n : write_tokenizer_gguf(d, w)) out.notes.push_back(std::move(n));
  };
  if (!tokenizer_gguf.empty()) {
    put_tokenizer(tokenizer_data_from_gguf(gguf::File::open(tokenizer_gguf)));
    out.notes.push_back("tokenizer taken from " + tokenizer_gguf);
  } else if (ck.meta("tokenizer.ggml.model")) {
    put_tokenizer(tokenizer_data_from_checkpoint(ck));
  } else if (fs::exists(dir / "tokenizer.json")) {
    put_tokenizer(tokenizer_data_from_hf(dir.string()));
  } else {
    w.set_string("tokenizer.ggml.model", "none");
    out.notes.push_back("no tokenizer in " + dir.string() + ": wrote tokenizer.ggml.model = none (no vocabulary)");
  }

  return out;
}

}  // namespace nvfp4

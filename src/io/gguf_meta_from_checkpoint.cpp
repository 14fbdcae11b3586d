#include "io/gguf_meta_from_checkpoint.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/rope_freqs_llama3.h"
#include "io/tokenizer_gguf_writer.h"
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4 {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path hf_dir(const std::string& path) {
  if (fs::is_directory(path)) return path;
  const fs::path p = fs::path(path).parent_path();
  return p.empty() ? fs::path(".") : p;
}

Json read_config(const fs::path& dir) {
  std::ifstream f(dir / "config.json");
  if (!f) return Json::object();
  Json j = Json::parse(f, nullptr, false);
  return j.is_object() ? j : Json::object();
}

double num(const Json& j, const char* key, double dflt) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : dflt;
}

// rope_scaling (transformers 4) or rope_parameters (transformers 5) with rope_type "llama3".
void add_rope_freqs(const Json& config, const std::string& cfg_path, GgufFromHf& out) {
  const Json* rp = nullptr;
  for (const char* k : {"rope_parameters", "rope_scaling"}) {
    if (config.contains(k) && config[k].is_object()) {
      rp = &config[k];
      break;
    }
  }
  if (!rp) return;
  std::string type = rp->value("rope_type", std::string());
  if (type.empty()) type = rp->value("type", std::string());
  for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (type != "llama3") return;
  const double theta = num(*rp, "rope_theta", num(config, "rope_theta", 10000.0));
  int64_t head_dim = static_cast<int64_t>(num(config, "head_dim", 0));
  if (head_dim <= 0) {
    const int64_t heads = static_cast<int64_t>(num(config, "num_attention_heads", 0));
    if (heads <= 0) throw Error(cfg_path, "", "Llama 3 RoPE scaling needs the head dimension", "head_dim or num_attention_heads", "neither");
    head_dim = static_cast<int64_t>(num(config, "hidden_size", 0)) / heads;
  }
  RopeLlama3 p;
  p.factor = num(*rp, "factor", p.factor);
  p.low_freq_factor = num(*rp, "low_freq_factor", p.low_freq_factor);
  p.high_freq_factor = num(*rp, "high_freq_factor", p.high_freq_factor);
  p.original_ctx = num(*rp, "original_max_position_embeddings", p.original_ctx);
  try {
    out.f32_tensors.emplace_back("rope_freqs.weight", rope_freq_factors_llama3(head_dim, theta, p));
  } catch (const Error& e) {
    throw Error(cfg_path, e.tensor(), e.rule(), e.expected(), e.found());
  }
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
  for (const std::string& k : ck.meta_keys()) {
    if (k == "general.architecture") continue;
    if (starts_with(k, "general.") || starts_with(k, arch + ".")) w.set(k, *ck.meta(k));
  }

  const fs::path dir = hf_dir(path);
  const Json config = read_config(dir);
  // transformers 5 moved rope_theta into rope_parameters; llama.cpp's converter reads it there.
  if (!w.find(arch + ".rope.freq_base") && config.contains("rope_parameters") && config["rope_parameters"].is_object() &&
      config["rope_parameters"].contains("rope_theta") && config["rope_parameters"]["rope_theta"].is_number()) {
    w.set_f32(arch + ".rope.freq_base", config["rope_parameters"]["rope_theta"].get<float>());
  }
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
    write_tokenizer_gguf(d, w);
  };
  if (!tokenizer_gguf.empty()) {
    put_tokenizer(tokenizer_data_from_gguf(gguf::File::open(tokenizer_gguf)));
    out.notes.push_back("tokenizer taken from " + tokenizer_gguf);
  } else if (ck.meta("tokenizer.ggml.model")) {
    put_tokenizer(tokenizer_data_from_checkpoint(ck));
  } else if (fs::exists(dir / "tokenizer.json")) {
    throw Error((dir / "tokenizer.json").string(), "", "this build cannot read HF tokenizer files yet",
                "--tokenizer FILE.gguf naming a GGUF with the same tokenizer", "tokenizer.json");
  } else {
    w.set_string("tokenizer.ggml.model", "none");
    out.notes.push_back("no tokenizer in " + dir.string() + ": wrote tokenizer.ggml.model = none (no vocabulary)");
  }

  add_rope_freqs(config, (dir / "config.json").string(), out);
  return out;
}

}  // namespace nvfp4

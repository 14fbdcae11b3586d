// tokenizer.json -> TokenizerData: the BPE model (vocab, merges as "a b" strings or ["a", "b"]
// pairs, byte_fallback, ignore_merges, unk) and added_tokens; the pipeline around the model is
// read by tokenizer_json_pipeline.cpp. Tokens are laid out by id as GGUF stores them.
#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "text/tokenizer_json_pipeline.h"

namespace nvfp4 {

using jsonf::Json;

namespace {

bool is_byte_token(const std::string& s) {
  unsigned v = 0;
  return s.size() == 6 && s[5] == '>' && std::sscanf(s.c_str(), "<0x%2X>", &v) == 1;
}

void read_merges(const Json& model, const std::string& file, TokenizerData& d) {
  const Json* m = jsonf::optional(model, "merges");
  if (!m) return;
  if (!m->is_array()) jsonf::fail(file, "model.merges", "an array", jsonf::describe(*m));
  d.merges.reserve(m->size());
  for (size_t i = 0; i < m->size(); ++i) {
    const Json& x = (*m)[i];
    const std::string field = "model.merges[" + std::to_string(i) + "]";
    if (x.is_string()) {
      d.merges.push_back(x.get<std::string>());
      continue;
    }
    if (!x.is_array() || x.size() != 2 || !x[0].is_string() || !x[1].is_string())
      jsonf::fail(file, field, "\"a b\" or [\"a\", \"b\"]", jsonf::describe(x));
    const std::string a = x[0].get<std::string>(), b = x[1].get<std::string>();
    if (a.empty() || a.find(' ') != std::string::npos)
      jsonf::fail(file, field, "a left token without a space (merges are stored as \"a b\")", "\"" + a + "\"");
    d.merges.push_back(a + " " + b);
  }
}

}  // namespace

TokenizerData tokenizer_data_from_json(const std::string& text, const std::string& file) {
  const Json root = jsonf::parse(text, file);
  if (!root.is_object()) jsonf::fail(file, "", "a JSON object", jsonf::describe(root));
  TokenizerData d;
  d.source = file;
  const Json& model = jsonf::member(root, "model", file, "");
  const Json* mt = jsonf::optional(model, "type");
  const std::string type = mt ? jsonf::str(*mt, file, "model.type") : "BPE";
  if (type != "BPE")
    jsonf::fail(file, "model.type", "BPE (WordPiece, Unigram and WordLevel are not supported)", type);
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const Json* v = jsonf::optional(model, k))
      if (!(v->is_string() && v->get<std::string>().empty()))
        jsonf::fail(file, std::string("model.") + k, "null or \"\"", jsonf::describe(*v));
  if (const Json* v = jsonf::optional(model, "dropout"))
    if (!(v->is_number() && v->get<double>() == 0.0)) jsonf::fail(file, "model.dropout", "null", jsonf::describe(*v));
  const bool byte_fallback = jsonf::boolean(model, "byte_fallback", false, file, "model");
  d.ignore_merges = jsonf::boolean(model, "ignore_merges", false, file, "model");
  d.fuse_unk = jsonf::boolean(model, "fuse_unk", false, file, "model");

  // Vocabulary and added tokens, by id.
  const Json& vocab = jsonf::member(model, "vocab", file, "model");
  if (!vocab.is_object()) jsonf::fail(file, "model.vocab", "an object", jsonf::describe(vocab));
  constexpr int64_t kMax = 1 << 24;
  auto check_id = [&](int64_t id, const std::string& field) {
    if (id < 0 || id >= kMax) jsonf::fail(file, field, "an id in 0 .. 2^24", std::to_string(id));
  };
  std::vector<std::string> tokens;
  std::vector<uint8_t> set;
  auto place = [&](int64_t id, const std::string& s) {
    if (static_cast<size_t>(id) >= tokens.size()) {
      tokens.resize(static_cast<size_t>(id) + 1);
      set.resize(static_cast<size_t>(id) + 1, 0);
    }
    tokens[static_cast<size_t>(id)] = s;
    set[static_cast<size_t>(id)] = 1;
  };
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const int64_t id = jsonf::integer(it.value(), file, "model.vocab[\"" + it.key() + "\"]");
    check_id(id, "model.vocab[\"" + it.key() + "\"]");
    if (static_cast<size_t>(id) < set.size() && set[static_cast<size_t>(id)])
      jsonf::fail(file, "model.vocab", "distinct ids", "id " + std::to_string(id) + " twice");
    place(id, it.key());
  }
  const Json* added = jsonf::optional(root, "added_tokens");
  if (added && !added->is_array()) jsonf::fail(file, "added_tokens", "an array", jsonf::describe(*added));
  if (added) {
    for (size_t i = 0; i < added->size(); ++i) {
      const Json& a = (*added)[i];
      const std::string field = "added_tokens[" + std::to_string(i) + "]";
      AddedToken t;
      const int64_t id = jsonf::integer(jsonf::member(a, "id", file, field), file, field + ".id");
      check_id(id, field + ".id");
      t.id = static_cast<int32_t>(id);
      const std::string content = jsonf::str(jsonf::member(a, "content", file, field), file, field + ".content");
      if (content.empty()) jsonf::fail(file, field + ".content", "a non-empty string", "\"\"");
      t.special = jsonf::boolean(a, "special", false, file, field);
      t.normalized = jsonf::boolean(a, "normalized", !t.special, file, field);
      t.lstrip = jsonf::boolean(a, "lstrip", false, file, field);
      t.rstrip = jsonf::boolean(a, "rstrip", false, file, field);
      t.single_word = jsonf::boolean(a, "single_word", false, file, field);
      place(id, content);  // the added token's text wins over the model's, as in tokenizers
      d.added.push_back(t);
    }
  }
  if (tokens.empty()) jsonf::fail(file, "model.vocab", "at least one token", "none");
  const size_t entries = vocab.size() + (added ? added->size() : 0);
  if (tokens.size() > entries + 1024)  // holes are filled with [PADn] tokens: only a few
    jsonf::fail(file, "model.vocab", "ids below the number of tokens + 1024 (" + std::to_string(entries + 1024) + ")",
                "id " + std::to_string(tokens.size() - 1));
  d.tokens = std::move(tokens);
  d.token_types.assign(d.tokens.size(), static_cast<int32_t>(TokenType::normal));
  for (size_t i = 0; i < d.tokens.size(); ++i)
    if (!set[i]) {
      d.tokens[i] = "[PAD" + std::to_string(i) + "]";  // a hole in the ids, as llama.cpp fills it
      d.token_types[i] = static_cast<int32_t>(TokenType::unused);
    }

  // Model kind: byte-level (a ByteLevel pre-tokenizer) or SentencePiece-style (byte fallback).
  const std::string pre_dump = root.contains("pre_tokenizer") ? root["pre_tokenizer"].dump() : "null";
  const bool byte_level = pre_dump.find("\"ByteLevel\"") != std::string::npos;
  if (!byte_level && !byte_fallback)
    jsonf::fail(file, "model.byte_fallback", "true (SentencePiece-style BPE) or a ByteLevel pre_tokenizer",
                "false with pre_tokenizer " + pre_dump.substr(0, 200));
  d.model = byte_level ? "gpt2" : "llama";
  hfjson::read_pipeline(root, file, d);
  // llama.cpp names DeepSeek-R1-Distill-Qwen's vocabulary apart (same pre-tokenizer as qwen2).
  if (d.pre == "qwen2" && std::find(d.tokens.begin(), d.tokens.end(),
                                    "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>") != d.tokens.end())
    d.pre = "deepseek-r1-qwen";
  read_merges(model, file, d);

  if (const Json* u = jsonf::optional(model, "unk_token")) {
    const std::string s = jsonf::str(*u, file, "model.unk_token");
    auto it = std::find(d.tokens.begin(), d.tokens.end(), s);
    if (it == d.tokens.end()) jsonf::fail(file, "model.unk_token", "a vocabulary token", "\"" + s + "\"");
    d.unk = static_cast<int32_t>(it - d.tokens.begin());
  }
  for (const AddedToken& t : d.added)
    d.token_types[static_cast<size_t>(t.id)] =
        static_cast<int32_t>(t.special ? TokenType::control : TokenType::user_defined);
  if (d.model == "llama") {
    for (size_t i = 0; i < d.tokens.size(); ++i)
      if (d.token_types[i] == static_cast<int32_t>(TokenType::normal) && is_byte_token(d.tokens[i]))
        d.token_types[i] = static_cast<int32_t>(TokenType::byte);
    if (d.unk >= 0) d.token_types[static_cast<size_t>(d.unk)] = static_cast<int32_t>(TokenType::unknown);
    // Scores for GGUF (llama.cpp merges by score): minus the rank of the first merge giving the
    // token, so that merging by highest score follows the merge order; 0 for other tokens.
    std::unordered_map<std::string, int32_t> index;
    for (size_t i = 0; i < d.tokens.size(); ++i) index.emplace(d.tokens[i], static_cast<int32_t>(i));
    d.scores.assign(d.tokens.size(), 0.0f);
    std::vector<uint8_t> scored(d.tokens.size(), 0);
    for (size_t r = 0; r < d.merges.size(); ++r) {
      std::string joined = d.merges[r];
      const size_t sp = joined.find(' ', 1);
      if (sp == std::string::npos) continue;  // Tokenizer::build refuses it
      joined.erase(sp, 1);
      auto it = index.find(joined);
      if (it != index.end() && !scored[static_cast<size_t>(it->second)]) {
        d.scores[static_cast<size_t>(it->second)] = -static_cast<float>(r + 1);
        scored[static_cast<size_t>(it->second)] = 1;
      }
    }
  }
  const std::string bos = hfjson::template_bos(root, file);
  if (!bos.empty()) {
    auto it = std::find(d.tokens.begin(), d.tokens.end(), bos);
    if (it == d.tokens.end()) jsonf::fail(file, "post_processor.single", "a vocabulary token", "\"" + bos + "\"");
    d.bos = static_cast<int32_t>(it - d.tokens.begin());
    d.add_bos = true;
  }
  return d;
}

}  // namespace nvfp4

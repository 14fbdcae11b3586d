// An HF tokenizer directory: tokenizer.json (tokenizer_json.cpp), tokenizer_config.json
// (bos_token, eos_token, add_bos_token, chat_template), chat_template.jinja (preferred, as
// transformers does) and generation_config.json (eos_token_id: all are end-of-generation ids).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "nvfp4/mapped_file.h"
#include "nvfp4/error.h"
#include "nvfp4/tokenizer.h"
#include "text/json_fields.h"

namespace nvfp4 {

using jsonf::Json;

namespace {

bool read_file(const std::string& path, std::string& out) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return false;
  out = read_regular_file(path);  // a FIFO or device is refused (nvfp4::Error), not waited on
  return true;
}

// A special token given as "text" or {"content": "text", ...}; "" when null.
std::string token_text(const Json& v, const std::string& file, const std::string& field) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return jsonf::str(jsonf::member(v, "content", file, field), file, field + ".content");
}

int32_t id_of(const TokenizerData& d, const std::string& text, const std::string& file, const std::string& field) {
  for (size_t i = 0; i < d.tokens.size(); ++i)
    if (d.tokens[i] == text) return static_cast<int32_t>(i);
  jsonf::fail(file, field, "a token of tokenizer.json", "\"" + text + "\"");
}

void read_config(const std::string& file, TokenizerData& d) {
  std::string text;
  if (!read_file(file, text)) return;
  const Json c = jsonf::parse(text, file);
  if (!c.is_object()) jsonf::fail(file, "", "a JSON object", jsonf::describe(c));
  if (const Json* v = jsonf::optional(c, "bos_token")) {
    const std::string s = token_text(*v, file, "bos_token");
    if (!s.empty()) d.bos = id_of(d, s, file, "bos_token");
  }
  if (const Json* v = jsonf::optional(c, "eos_token")) {
    const std::string s = token_text(*v, file, "eos_token");
    if (!s.empty()) d.eos = id_of(d, s, file, "eos_token");
  }
  if (const Json* v = jsonf::optional(c, "pad_token")) {
    const std::string s = token_text(*v, file, "pad_token");
    if (!s.empty()) d.pad = id_of(d, s, file, "pad_token");
  }
  d.add_bos = jsonf::boolean(c, "add_bos_token", d.add_bos, file, "");
  if (d.add_bos && d.bos < 0) jsonf::fail(file, "add_bos_token", "a bos_token with it", "none");
  if (const Json* t = jsonf::optional(c, "chat_template")) {
    if (t->is_string()) {
      d.chat_template = t->get<std::string>();
    } else if (t->is_array()) {  // [{"name": ..., "template": ...}]: the "default" one
      for (const Json& x : *t)
        if (jsonf::optional(x, "name") && x["name"] == "default")
          d.chat_template = jsonf::str(jsonf::member(x, "template", file, "chat_template[]"), file, "chat_template[].template");
      if (d.chat_template.empty()) jsonf::fail(file, "chat_template", "a template named \"default\"", "none");
    } else {
      jsonf::fail(file, "chat_template", "a string or a list of {name, template}", jsonf::describe(*t));
    }
  }
}

void read_generation_config(const std::string& file, TokenizerData& d) {
  std::string text;
  if (!read_file(file, text)) return;
  const Json c = jsonf::parse(text, file);
  const Json* e = jsonf::optional(c, "eos_token_id");
  if (!e) return;
  const int64_t n = static_cast<int64_t>(d.tokens.size());
  auto add = [&](const Json& v) {
    const int64_t id = jsonf::integer(v, file, "eos_token_id");
    if (id < 0 || id >= n) jsonf::fail(file, "eos_token_id", "0 .. " + std::to_string(n - 1), std::to_string(id));
    d.eog_ids.push_back(static_cast<int32_t>(id));
  };
  if (e->is_array()) for (const Json& v : *e) add(v);
  else add(*e);
  if (d.eos < 0 && !d.eog_ids.empty()) d.eos = d.eog_ids.front();
}

}  // namespace

TokenizerData tokenizer_data_from_hf(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string tj = (fs::path(dir) / "tokenizer.json").string();
  std::string text;
  if (!read_file(tj, text))
    throw Error(tj, "", "HF tokenizer file", "tokenizer.json in the checkpoint directory", "missing or unreadable");
  TokenizerData d = tokenizer_data_from_json(text, tj);
  read_config((fs::path(dir) / "tokenizer_config.json").string(), d);
  std::string jinja;
  if (read_file((fs::path(dir) / "chat_template.jinja").string(), jinja)) d.chat_template = jinja;
  read_generation_config((fs::path(dir) / "generation_config.json").string(), d);
  return d;
}

}  // namespace nvfp4

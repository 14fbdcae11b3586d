#include "text/hf_tokenizer_writer.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nvfp4/error.h"
#include "nvfp4/tokenizer.h"
#include "text/tokenizer_json_pipeline.h"

namespace nvfp4 {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

Json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

Json pre_tokenizer(const TokenizerData& d) {
  if (d.pre == "smollm")
    return {{"type", "Sequence"},
            {"pretokenizers", Json::array({{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true)})}};
  if (d.pre == "gpt-2" || d.pre == "default") return byte_level(true);
  if (const char* pat = hfjson::split_pattern(d.pre))
    return {{"type", "Sequence"},
            {"pretokenizers", Json::array({{{"type", "Split"}, {"pattern", {{"Regex", pat}}}, {"behavior", "Isolated"}, {"invert", false}},
                                           byte_level(false)})}};
  throw Error(d.source, "", "cannot write tokenizer.json for this pre-tokenizer (tokenizer.ggml.pre)",
              "smollm, gpt-2, llama-bpe or qwen2", d.pre);
}

void write_json(const fs::path& p, const Json& j) {
  std::ofstream f(p);
  f << j.dump(2, ' ', false, Json::error_handler_t::strict) << "\n";
  if (!f) throw Error(p.string(), "", "cannot write the output", "a written file", "a write error");
}

}  // namespace

std::vector<std::string> write_hf_tokenizer(const Checkpoint& ck, const std::string& dir) {
  std::vector<std::string> written;
  if (ck.info().container == "safetensors") {  // the source's own files, as they are
    const fs::path p(ck.info().path);
    const fs::path src = fs::is_directory(p) ? p : p.parent_path();
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                          "generation_config.json", "tokenizer.model"})
      if (fs::exists(src / f)) {
        fs::copy_file(src / f, fs::path(dir) / f, fs::copy_options::overwrite_existing);
        written.emplace_back(f);
      }
    return written;
  }
  const TokenizerData d = tokenizer_data_from_checkpoint(ck);
  if (d.model != "gpt2")
    throw Error(ck.info().path, "", "cannot write tokenizer.json for this vocabulary (tokenizer.ggml.model)", "gpt2 (byte-level BPE)", d.model);
  Json vocab = Json::object();
  Json added = Json::array();
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    vocab[d.tokens[i]] = i;
    const int32_t type = i < d.token_types.size() ? d.token_types[i] : 1;
    if (type == 3 || type == 4)  // control, user-defined: added tokens as tokenizers keeps them
      added.push_back({{"id", i}, {"content", d.tokens[i]}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", type == 4}, {"special", type == 3}});
  }
  Json merges = Json::array();
  for (const std::string& m : d.merges) {
    const auto sp = m.find(' ');
    if (sp == std::string::npos) throw Error(ck.info().path, "", "tokenizer.ggml.merges entry", "\"left right\"", m);
    merges.push_back(Json::array({m.substr(0, sp), m.substr(sp + 1)}));
  }
  Json tj = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added},
             {"normalizer", d.nfc ? Json{{"type", "NFC"}} : Json(nullptr)}, {"pre_tokenizer", pre_tokenizer(d)},
             {"post_processor", nullptr}, {"decoder", byte_level(true)},
             {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
                        {"ignore_merges", d.pre == "llama-bpe"}, {"vocab", vocab}, {"merges", merges}}}};
  write_json(fs::path(dir) / "tokenizer.json", tj);
  Json tc = {{"tokenizer_class", "PreTrainedTokenizerFast"}, {"add_bos_token", d.add_bos}, {"clean_up_tokenization_spaces", false}};
  const auto token = [&](int32_t id) { return id >= 0 && static_cast<size_t>(id) < d.tokens.size() ? Json(d.tokens[static_cast<size_t>(id)]) : Json(nullptr); };
  tc["bos_token"] = token(d.bos);
  tc["eos_token"] = token(d.eos);
  if (d.pad >= 0) tc["pad_token"] = token(d.pad);
  if (!d.chat_template.empty()) tc["chat_template"] = d.chat_template;
  write_json(fs::path(dir) / "tokenizer_config.json", tc);
  written = {"tokenizer.json", "tokenizer_config.json"};
  return written;
}

}  // namespace nvfp4

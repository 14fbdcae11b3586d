#include "text/tokenizer_json_pipeline.h"

#include <vector>

namespace nvfp4::hfjson {

using jsonf::Json;

namespace {

// The Split regexes of published tokenizer.json files that text/pretokenize*.cpp implement.
struct KnownPattern { const char* pattern; const char* pre; };
const KnownPattern kPatterns[] = {
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "llama-bpe"},
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "qwen2"},
    {R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", "gpt-2"},
};
// DeepSeek V3's three Splits (pretokenize_deepseek3.cpp), as its tokenizer.json writes them.
const char* const kDeepSeek3[] = {
    "\\p{N}{1,3}",
    "[\xE4\xB8\x80""-\xE9\xBE\xA5""\xE3\x81\x80""-\xE3\x82\x9F""\xE3\x82\xA0""-\xE3\x83\xBF""]+",
    ("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
     "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"),
};
const char* kMeta = "\xE2\x96\x81";

// The Regex of an Isolated, non-inverted Split; nullptr for anything else.
const Json* isolated_regex(const Json& s, const std::string& file) {
  const Json* pat = jsonf::optional(s, "pattern");
  const Json* re = pat ? jsonf::optional(*pat, "Regex") : nullptr;
  const Json* beh = jsonf::optional(s, "behavior");
  const bool invert = jsonf::boolean(s, "invert", false, file, "pre_tokenizer");
  return re && re->is_string() && beh && *beh == "Isolated" && !invert ? re : nullptr;
}

struct Ctx {
  const std::string& file;
  TokenizerData& d;
  bool replaces_spaces = false;  // normalizer Replace(" ", "▁") or Metaspace
};

std::string type_of(const Json& v, const std::string& file, const std::string& field) {
  return jsonf::str(jsonf::member(v, "type", file, field), file, field + ".type");
}

// The items of a Sequence (key: "normalizers", "pretokenizers", "decoders", "processors"), or
// the value itself.
std::vector<const Json*> items(const Json& v, const char* key, const std::string& file, const std::string& field) {
  std::vector<const Json*> out;
  if (type_of(v, file, field) != "Sequence") {
    out.push_back(&v);
    return out;
  }
  const Json& arr = jsonf::member(v, key, file, field);
  if (!arr.is_array()) jsonf::fail(file, field + "." + key, "an array", jsonf::describe(arr));
  for (const Json& x : arr) {
    if (!x.is_object()) jsonf::fail(file, field + "." + key, "objects", jsonf::describe(x));
    if (type_of(x, file, field) == "Sequence") jsonf::fail(file, field + "." + key, "no nested Sequence", "Sequence");
    out.push_back(&x);
  }
  return out;
}

bool is_replace(const Json& v, const char* from, const char* to) {
  const Json* p = jsonf::optional(v, "pattern");
  const Json* c = jsonf::optional(v, "content");
  const Json* s = p ? jsonf::optional(*p, "String") : nullptr;
  return s && c && s->is_string() && c->is_string() && *s == from && *c == to;
}

void normalizer(const Json& root, Ctx& c) {
  const Json* n = jsonf::optional(root, "normalizer");
  if (!n) return;
  const bool spm = c.d.model == "llama";
  for (const Json* x : items(*n, "normalizers", c.file, "normalizer")) {
    const std::string t = type_of(*x, c.file, "normalizer");
    if (t == "NFC") {
      c.d.nfc = true;
    } else if (spm && t == "Prepend" && jsonf::optional(*x, "prepend") && (*x)["prepend"] == kMeta) {
      c.d.space_prefix = "prepend";
    } else if (spm && t == "Replace" && is_replace(*x, " ", kMeta)) {
      c.replaces_spaces = true;
    } else {
      jsonf::fail(c.file, "normalizer", spm ? "NFC, Prepend(\"▁\"), Replace(\" \", \"▁\") or a Sequence of them"
                                            : "null, NFC or a Sequence of NFC",
                  t + " " + x->dump().substr(0, 200));
    }
  }
}

void byte_level_pre(const Json& root, Ctx& c) {
  const Json* p = jsonf::optional(root, "pre_tokenizer");
  const char* expected =
      "ByteLevel(use_regex=true), Sequence[Digits(individual_digits=true), ByteLevel(use_regex=true)] "
      "or Sequence[Split(Regex of GPT-2, Llama 3 or Qwen2, Isolated), ByteLevel(use_regex=false)] or "
      "DeepSeek V3's Sequence of three Splits and ByteLevel(use_regex=false), "
      "add_prefix_space=false";
  if (!p) jsonf::fail(c.file, "pre_tokenizer", expected, "null");
  const auto v = items(*p, "pretokenizers", c.file, "pre_tokenizer");
  if (v.empty()) jsonf::fail(c.file, "pre_tokenizer", expected, "an empty Sequence");
  std::vector<std::string> types;
  for (const Json* x : v) types.push_back(type_of(*x, c.file, "pre_tokenizer"));
  auto found = [&] { return p->dump().substr(0, 400); };
  const Json& last = *v.back();
  if (types.back() != "ByteLevel" || jsonf::boolean(last, "add_prefix_space", false, c.file, "pre_tokenizer"))
    jsonf::fail(c.file, "pre_tokenizer", expected, found());
  const bool regex = jsonf::boolean(last, "use_regex", true, c.file, "pre_tokenizer");
  if (v.size() == 1 && regex) { c.d.pre = "gpt-2"; return; }
  if (v.size() == 2 && regex && types[0] == "Digits" &&
      jsonf::boolean(*v[0], "individual_digits", false, c.file, "pre_tokenizer")) {
    c.d.pre = "smollm";
    return;
  }
  if (v.size() == 4 && !regex && types[0] == "Split" && types[1] == "Split" && types[2] == "Split") {
    bool all = true;
    for (size_t i = 0; i < 3; ++i) {
      const Json* re = isolated_regex(*v[i], c.file);
      all = all && re && *re == kDeepSeek3[i];
    }
    if (all) { c.d.pre = "deepseek-v3"; return; }
  }
  if (v.size() == 2 && !regex && types[0] == "Split") {
    if (const Json* re = isolated_regex(*v[0], c.file)) {
      for (const KnownPattern& k : kPatterns)
        if (*re == k.pattern) { c.d.pre = k.pre; return; }
      jsonf::fail(c.file, "pre_tokenizer", std::string("a Split regex of GPT-2, Llama 3 or Qwen2 (") + kPatterns[0].pattern + " ...)",
                  jsonf::describe(*re));
    }
  }
  jsonf::fail(c.file, "pre_tokenizer", expected, found());
}

void metaspace_pre(const Json& root, Ctx& c) {
  const Json* p = jsonf::optional(root, "pre_tokenizer");
  if (!p) return;
  const auto v = items(*p, "pretokenizers", c.file, "pre_tokenizer");
  if (v.empty()) return;
  const Json& m = *v[0];
  if (v.size() != 1 || type_of(m, c.file, "pre_tokenizer") != "Metaspace" || !jsonf::optional(m, "replacement") ||
      m["replacement"] != kMeta)
    jsonf::fail(c.file, "pre_tokenizer", "null or Metaspace(replacement=\"▁\")", p->dump().substr(0, 300));
  if (c.d.space_prefix == "prepend")
    jsonf::fail(c.file, "pre_tokenizer", "Metaspace only without a Prepend normalizer", "both");
  std::string scheme = "always";
  if (const Json* s = jsonf::optional(m, "prepend_scheme")) scheme = jsonf::str(*s, c.file, "pre_tokenizer.prepend_scheme");
  else if (!jsonf::boolean(m, "add_prefix_space", true, c.file, "pre_tokenizer")) scheme = "never";
  if (scheme != "always" && scheme != "first" && scheme != "never")
    jsonf::fail(c.file, "pre_tokenizer.prepend_scheme", "always, first or never", scheme);
  c.d.space_prefix = scheme;
  c.d.metaspace_split = jsonf::boolean(m, "split", true, c.file, "pre_tokenizer");
  c.replaces_spaces = true;
}

void decoder(const Json& root, Ctx& c) {
  const bool spm = c.d.model == "llama";
  const Json* p = jsonf::optional(root, "decoder");
  const char* expected = spm ? "Sequence[Replace(\"▁\", \" \"), ByteFallback, Fuse, Strip(\" \", n, 0)] or Metaspace"
                             : "ByteLevel, or a Sequence of ByteLevel with ByteFallback, Fuse, Replace(\"▁\", \" \")";
  if (!p) jsonf::fail(c.file, "decoder", expected, "null");
  bool byte_level = false, byte_fallback = false, replace = false;
  for (const Json* x : items(*p, "decoders", c.file, "decoder")) {
    const std::string t = type_of(*x, c.file, "decoder");
    if (t == "ByteLevel" && !spm) byte_level = true;
    else if (t == "ByteFallback") byte_fallback = true;
    else if (t == "Fuse") continue;
    else if (t == "Replace" && is_replace(*x, kMeta, " ")) replace = true;
    else if (spm && t == "Strip" && jsonf::optional(*x, "content") && (*x)["content"] == " " &&
             jsonf::optional(*x, "start") && jsonf::optional(*x, "stop") && (*x)["stop"] == 0) {
      const int64_t n = jsonf::integer((*x)["start"], c.file, "decoder.start");
      if (n < 0 || n > 16) jsonf::fail(c.file, "decoder.start", "0 .. 16", std::to_string(n));
      c.d.decode_strip = static_cast<int32_t>(n);
    } else if (spm && t == "Metaspace") {
      replace = true;
      const Json* s = jsonf::optional(*x, "prepend_scheme");
      c.d.decode_strip = (s && *s == "never") || !jsonf::boolean(*x, "add_prefix_space", true, c.file, "decoder") ? 0 : 1;
    } else {
      jsonf::fail(c.file, "decoder", expected, t);
    }
  }
  if (spm ? !(replace && byte_fallback) : !byte_level) jsonf::fail(c.file, "decoder", expected, p->dump().substr(0, 300));
}

}  // namespace

void read_pipeline(const Json& root, const std::string& file, TokenizerData& d) {
  Ctx c{file, d};
  if (d.model == "llama") d.space_prefix = "never";
  normalizer(root, c);
  if (d.model == "llama") {
    metaspace_pre(root, c);
    if (!c.replaces_spaces)
      jsonf::fail(file, "normalizer", "Replace(\" \", \"▁\") or a Metaspace pre_tokenizer", "neither");
    d.pre = "default";
  } else {
    byte_level_pre(root, c);
  }
  decoder(root, c);
}

std::string template_bos(const Json& root, const std::string& file) {
  const Json* p = jsonf::optional(root, "post_processor");
  if (!p) return "";
  for (const Json* x : items(*p, "processors", file, "post_processor")) {
    if (type_of(*x, file, "post_processor") != "TemplateProcessing") continue;
    const Json* single = jsonf::optional(*x, "single");
    if (!single || !single->is_array() || single->empty()) return "";
    const Json* st = jsonf::optional((*single)[0], "SpecialToken");
    const Json* id = st ? jsonf::optional(*st, "id") : nullptr;
    return id && id->is_string() ? id->get<std::string>() : "";
  }
  return "";
}

const char* split_pattern(const std::string& pre) {
  for (const KnownPattern& k : kPatterns)
    if (pre == k.pre) return k.pattern;
  return nullptr;
}

}  // namespace nvfp4::hfjson

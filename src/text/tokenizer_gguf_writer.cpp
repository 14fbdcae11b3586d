#include "text/tokenizer_gguf_writer.h"

#include <type_traits>

#include "nvfp4/error.h"
#include "nvfp4/gguf.h"

namespace nvfp4 {

namespace {

gguf::Value string_array(const std::vector<std::string>& v) {
  gguf::Value a;
  a.type = gguf::ValueType::array;
  a.arr = gguf::Array(gguf::ValueType::string);
  size_t bytes = 0;
  for (const auto& s : v) bytes += s.size();
  a.arr.reserve(v.size(), bytes);
  for (const auto& s : v) a.arr.push_string(s);
  return a;
}

// An array of ints (i32) or floats (f32), each element as Writer::set would write it alone.
template <typename T>
gguf::Value number_array(const std::vector<T>& v, gguf::ValueType t) {
  gguf::Value a;
  a.type = gguf::ValueType::array;
  a.arr = gguf::Array(t);
  a.arr.reserve(v.size());
  gguf::Value e;
  e.type = t;
  for (T x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      e.f = static_cast<double>(x);
    } else {
      e.i = static_cast<int64_t>(x);
    }
    a.arr.push_back(e);
  }
  return a;
}

void set_keys(const TokenizerData& d, gguf::Writer& w);

// GGUF keeps what the model and pre-tokenizer names imply, not HF's pipeline details (added
// tokens' strip flags, normalizers, ...): the tokenizer read back from the keys must encode probe
// texts, and the text of every added token, as D does.
void check_round_trip(const TokenizerData& d_in, const Tokenizer& want_in, std::vector<std::string>& notes) {
  // NFC: GGUF has no key for it and llama.cpp does not normalize; written with a note, and the
  // rest of the pipeline must round-trip.
  TokenizerData d = d_in;
  if (d.nfc) {
    d.nfc = false;
    notes.push_back(d.source + ": the HF tokenizer normalizes to NFC; GGUF keys cannot say so (llama.cpp does not "
                    "normalize): text not in NFC may tokenize differently");
  }
  const Tokenizer want = d_in.nfc ? Tokenizer::build(d) : Tokenizer();
  const Tokenizer& w_ref = d_in.nfc ? want : want_in;
  gguf::Writer only;
  set_keys(d, only);
  const std::vector<uint8_t> bytes = only.serialize();
  const Tokenizer got = Tokenizer::build(tokenizer_data_from_gguf(gguf::File::parse(bytes.data(), bytes.size(), d.source)));
  std::vector<std::string> probes = {
      "Hello world! It's 2024-06-01, 3.14159 and  two  spaces\n\n\tTab.",
      " leading space, trailing space ",
      "Ünïcödé: 日本語のテキスト, emoji 🙂, Ελληνικά, русский, عربى",
      "def f(x):\n    return x**2  # comment\r\n",
      "don't WON'T I'm you'll we've 1234567 ...!!! ???",
      "combining: e\xcc\x81 A\xcc\x8a K\xcc\x81 \xe1\x84\x80\xe1\x85\xa1"};
  std::string specials;
  size_t n = 0;
  for (size_t i = 0; i < d.token_types.size() && n < 300; ++i) {
    const auto t = static_cast<TokenType>(d.token_types[i]);
    if (t == TokenType::control || t == TokenType::user_defined) {
      specials += "x" + d.tokens[i] + " y";
      ++n;
    }
  }
  for (const AddedToken& a : d.added) {
    if (a.id >= 0 && static_cast<size_t>(a.id) < d.tokens.size() && n++ < 600) specials += " " + d.tokens[static_cast<size_t>(a.id)] + "\n";
  }
  probes.push_back(specials);
  for (const std::string& p : probes) {
    if (w_ref.encode(p) != got.encode(p)) {
      throw Error(d.source, "", "the tokenizer cannot be written as GGUF keys without changing how it encodes",
                  "the same ids from tokenizer.ggml.* (model '" + d.model + "', pre '" + d.pre + "')",
                  "other ids for \"" + p.substr(0, 60) + "\"");
    }
  }
}

void set_keys(const TokenizerData& d, gguf::Writer& w) {
  w.set_string("tokenizer.ggml.model", d.model);
  w.set_string("tokenizer.ggml.pre", d.pre);
  w.set("tokenizer.ggml.tokens", string_array(d.tokens));
  if (!d.scores.empty()) w.set("tokenizer.ggml.scores", number_array(d.scores, gguf::ValueType::f32));
  if (!d.token_types.empty()) w.set("tokenizer.ggml.token_type", number_array(d.token_types, gguf::ValueType::i32));
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

}  // namespace

std::vector<std::string> write_tokenizer_gguf(const TokenizerData& d, gguf::Writer& w) {
  const Tokenizer want = Tokenizer::build(d);  // every rule of the runtime's loader, before anything is set
  std::vector<std::string> notes;
  check_round_trip(d, want, notes);
  set_keys(d, w);
  return notes;
}

}  // namespace nvfp4

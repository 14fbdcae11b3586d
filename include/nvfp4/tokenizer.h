// BPE tokenizers as HF `tokenizers` runs them, built from a GGUF's tokenizer.ggml.* metadata or from
// an HF tokenizer.json (tokenizer_data_from_hf): byte-level BPE (GPT-2 family: SmolLM, StarCoder,
// Llama 3, Qwen ...) and SentencePiece-style BPE ("▁" for spaces, <0xNN> byte fallback: Llama 2,
// Mistral). Encoding: added tokens written in the text are split out first (longest match first),
// the rest is normalized, pre-tokenized, then merged by merge rank, lowest first, leftmost on ties.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nvfp4 {

namespace gguf {
class File;
}
class Checkpoint;

// GGUF token types (llama.cpp's llama_token_type).
enum class TokenType : int32_t { undefined = 0, normal = 1, unknown = 2, control = 3,
                                 user_defined = 4, unused = 5, byte = 6 };

// An HF added token (tokenizer.json "added_tokens"): matched in the text before anything else.
struct AddedToken {
  int32_t id = -1;
  bool special = true;       // control token (skipped by decode(skip_special))
  bool normalized = false;   // matched in the normalized text rather than the raw text
  bool lstrip = false, rstrip = false;  // the match also takes the white space before / after it
  bool single_word = false;  // only when no word character touches the match
};

struct TokenizerData {
  std::string model = "gpt2";       // tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama"
                                    // (SentencePiece-style BPE with byte fallback)
  std::string pre = "default";      // tokenizer.ggml.pre
  std::vector<std::string> tokens;  // gpt2: byte-level strings (GPT-2's byte -> code point map);
                                    // llama: "▁" for a space, <0xNN> byte tokens
  std::vector<int32_t> token_types; // empty: all normal
  std::vector<float> scores;        // tokenizer.ggml.scores (llama; not used for encoding here)
  std::vector<std::string> merges;  // "left right", in rank order
  int32_t bos = -1, eos = -1, eot = -1, pad = -1, unk = -1;
  std::vector<int32_t> eog_ids;     // more end-of-generation ids (generation_config.json)
  bool add_bos = false;
  std::string chat_template;
  std::string source = "";  // file name for error messages
  // HF pipeline details that GGUF implies by model/pre (defaults: what the GGUF path does).
  std::vector<AddedToken> added;    // empty: the control and user-defined tokens of token_types
  bool ignore_merges = false;       // a piece that is a whole vocabulary token is kept whole
  bool nfc = false;                 // normalizer NFC before pre-tokenizing
  // llama: how "▁" goes before a text segment (the text between added tokens):
  //   "prepend"  normalizer Prepend("▁"): every non-empty segment
  //   "always"   Metaspace(prepend_scheme=always): every segment not starting with "▁"
  //   "first"    Metaspace(prepend_scheme=first): that, only for the segment at the text's start
  //   "never"
  std::string space_prefix = "first";
  bool metaspace_split = false;     // Metaspace(split=true): pieces start at each "▁"
  bool fuse_unk = false;            // consecutive unknown characters give one unk token
  int32_t decode_strip = 0;         // decoder Strip(" ", start=N): leading spaces removed
};

// Reads an HF tokenizer directory: dir/tokenizer.json (required), dir/tokenizer_config.json
// (bos/eos tokens, add_bos_token, chat_template), dir/chat_template.jinja (takes precedence) and
// dir/generation_config.json (eos_token_id: int or list, into eog_ids). Throws nvfp4::Error
// naming the file and field for anything it does not reproduce exactly (other models, regexes,
// normalizers, decoders).
TokenizerData tokenizer_data_from_hf(const std::string& dir);
// The tokenizer.json part alone (json_text: the file's contents, source: its name for errors).
TokenizerData tokenizer_data_from_json(const std::string& json_text, const std::string& source);
// The tokenizer.ggml.* / tokenizer.chat_template metadata of a GGUF file, as they are
// (Tokenizer::build validates). Throws nvfp4::Error when a required key is missing or of the
// wrong type.
TokenizerData tokenizer_data_from_gguf(const gguf::File& file);
// The tokenizer data of any checkpoint: an HF directory's files, or a GGUF's tokenizer.ggml.* keys.
TokenizerData tokenizer_data_from_checkpoint(const Checkpoint& ck);
// Forgets the checkpoint's big tokenizer arrays (tokenizer.ggml.tokens, .merges, .token_type,
// .scores; Checkpoint::forget_meta) once a tokenizer is built from them, so that they do not stay
// beside the weights. The small keys (ids, model, pre, chat template) stay.
void forget_tokenizer_arrays(Checkpoint& ck);

class Tokenizer {
 public:
  Tokenizer();
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Validates and indexes the vocabulary. Throws nvfp4::Error (naming data.source) for an unknown
  // model or pre-tokenizer, a merge of tokens that are not in the vocabulary, or special ids out
  // of range.
  static Tokenizer build(TokenizerData data);
  static Tokenizer from_gguf(const gguf::File& file);
  static Tokenizer from_checkpoint(const Checkpoint& ck);

  // Token ids of `text` (no BOS added; see add_bos()). parse_special: text such as "<|im_end|>"
  // becomes its special token; otherwise it is tokenized as plain text.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;
  // The bytes of the tokens, concatenated (special tokens as their text unless skip_special).
  // The result may end inside a UTF-8 sequence when the ids do.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;
  // The bytes of one token.
  std::string token_bytes(int32_t id) const;

  int32_t n_vocab() const;
  int32_t bos() const;
  int32_t eos() const;
  bool add_bos() const;
  bool is_special(int32_t id) const;
  // End of generation: eos, eot, eog_ids, or <|im_end|> / <|endoftext|> / <|eot_id|> when present.
  bool is_eog(int32_t id) const;
  const std::string& chat_template() const;
  const std::string& pre() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nvfp4

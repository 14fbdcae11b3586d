// Byte-level BPE tokenizer (GPT-2 family: SmolLM, StarCoder, Llama 3, Qwen ...) built from a GGUF's
// tokenizer.ggml.* metadata, or from the same data taken from elsewhere. Encoding matches HF
// `tokenizers` (pre-tokenizer, then BPE by merge rank, lowest first, leftmost on ties); special
// tokens (control and user-defined) written in the text are recognized, longest match first.
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

struct TokenizerData {
  std::string model = "gpt2";       // tokenizer.ggml.model: only "gpt2" (byte-level BPE) for now
  std::string pre = "default";      // tokenizer.ggml.pre
  std::vector<std::string> tokens;  // byte-level strings (GPT-2's byte -> code point map)
  std::vector<int32_t> token_types; // empty: all normal
  std::vector<std::string> merges;  // "left right", in rank order
  int32_t bos = -1, eos = -1, eot = -1, pad = -1, unk = -1;
  bool add_bos = false;
  std::string chat_template;
  std::string source = "";  // file name for error messages
};

// The tokenizer.ggml.* / tokenizer.chat_template metadata of a GGUF file or of a checkpoint, as
// they are (Tokenizer::build validates). Throws nvfp4::Error when a required key is missing or of
// the wrong type.
TokenizerData tokenizer_data_from_gguf(const gguf::File& file);
TokenizerData tokenizer_data_from_checkpoint(const Checkpoint& ck);

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
  // End of generation: eos, eot, or <|im_end|> / <|endoftext|> / <|eot_id|> when present.
  bool is_eog(int32_t id) const;
  const std::string& chat_template() const;
  const std::string& pre() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nvfp4

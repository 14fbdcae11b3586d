// Byte-level BPE: text -> pieces (pre-tokenizer) -> bytes mapped to GPT-2's printable code points
// -> merges by rank. Merging follows HF tokenizers' BPE model: repeatedly merge the adjacent pair
// of lowest rank, the leftmost one on ties, until no pair has a merge.
#include <algorithm>
#include <array>
#include <unordered_map>

#include "nvfp4/error.h"
#include "nvfp4/tokenizer.h"
#include "runtime/pretokenize.h"
#include "runtime/unicode.h"

namespace nvfp4 {

struct Tokenizer::Impl {
  TokenizerData d;
  PreTokenizer pre_kind = PreTokenizer::gpt2;
  std::unordered_map<std::string, int32_t> vocab;          // byte-level string -> id
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // (l,r) -> (rank, id)
  std::array<int32_t, 256> byte_token{};                   // id of each single byte, -1 if none
  std::array<uint32_t, 256> byte_to_cp{};                  // GPT-2's bytes_to_unicode
  std::unordered_map<uint32_t, uint8_t> cp_to_byte;
  std::vector<std::string> bytes;                          // decoded bytes of every token
  std::vector<int32_t> specials;                           // ids parsed out of text
  std::vector<int32_t> eog;

  void bpe(std::string_view piece, std::vector<int32_t>& out) const;
};

namespace {

const char* kDigitsFirst[] = {"smollm", "starcoder", "refact", "command-r", "codeshell",
                              "exaone", "minerva"};
const char* kGpt2[] = {"gpt-2", "gpt2", "mpt", "olmo", "jais", "trillion", "granite-docling"};

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::build(TokenizerData data) {
  auto im = std::make_unique<Impl>();
  Impl& t = *im;
  t.d = std::move(data);
  const std::string& src = t.d.source;
  if (t.d.model != "gpt2")
    throw Error(src, "", "unsupported tokenizer model (tokenizer.ggml.model)",
                "gpt2 (byte-level BPE)", t.d.model);
  bool known = false;
  for (const char* p : kDigitsFirst)
    if (t.d.pre == p) { t.pre_kind = PreTokenizer::digits_then_gpt2; known = true; }
  for (const char* p : kGpt2)
    if (t.d.pre == p) { t.pre_kind = PreTokenizer::gpt2; known = true; }
  if (!known)
    throw Error(src, "", "unsupported pre-tokenizer (tokenizer.ggml.pre)",
                "smollm, starcoder, refact, command-r, codeshell, exaone, minerva, gpt-2, mpt, olmo",
                t.d.pre);
  const int64_t n = static_cast<int64_t>(t.d.tokens.size());
  if (n == 0 || n > (1 << 30)) throw Error(src, "", "vocabulary size", "1 .. 2^30 tokens", std::to_string(n));
  if (!t.d.token_types.empty() && static_cast<int64_t>(t.d.token_types.size()) != n)
    throw Error(src, "", "tokenizer.ggml.token_type length", std::to_string(n),
                std::to_string(t.d.token_types.size()));
  for (int32_t* id : {&t.d.bos, &t.d.eos, &t.d.eot, &t.d.pad, &t.d.unk})
    if (*id < -1 || *id >= n)
      throw Error(src, "", "special token id out of range", "-1 or 0 .. " + std::to_string(n - 1),
                  std::to_string(*id));

  // GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the rest to 256 + k.
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    t.byte_to_cp[b] = printable ? static_cast<uint32_t>(b) : next++;
    t.cp_to_byte[t.byte_to_cp[b]] = static_cast<uint8_t>(b);
  }

  t.vocab.reserve(static_cast<size_t>(n) * 2);
  t.bytes.resize(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    const std::string& s = t.d.tokens[static_cast<size_t>(id)];
    t.vocab.emplace(s, id);  // the first id wins on duplicates, as in HF
    const auto type = t.d.token_types.empty() ? TokenType::normal
                                              : static_cast<TokenType>(t.d.token_types[static_cast<size_t>(id)]);
    if (type == TokenType::control || type == TokenType::user_defined) {
      t.bytes[static_cast<size_t>(id)] = s;
      if (!s.empty()) t.specials.push_back(id);
      continue;
    }
    std::string b;
    for (const auto& c : unicode::decode_utf8(s)) {
      auto it = t.cp_to_byte.find(c.cp);
      if (it != t.cp_to_byte.end()) b += static_cast<char>(it->second);
      else b.append(s, c.offset, c.len);  // not a byte-level code point: keep its UTF-8
    }
    t.bytes[static_cast<size_t>(id)] = std::move(b);
  }
  for (int b = 0; b < 256; ++b) {
    std::string s;
    unicode::append_utf8(t.byte_to_cp[b], s);
    auto it = t.vocab.find(s);
    t.byte_token[b] = it == t.vocab.end() ? -1 : it->second;
  }

  t.merges.reserve(t.d.merges.size() * 2);
  for (size_t r = 0; r < t.d.merges.size(); ++r) {
    const std::string& m = t.d.merges[r];
    const size_t sp = m.find(' ', 1);
    auto bad = [&](const std::string& why) {
      return Error(src, "", "tokenizer.ggml.merges[" + std::to_string(r) + "]: " + why,
                   "two vocabulary tokens whose concatenation is a token", "'" + m + "'");
    };
    if (sp == std::string::npos) throw bad("no separating space");
    const std::string a = m.substr(0, sp), b = m.substr(sp + 1);
    auto ia = t.vocab.find(a), ib = t.vocab.find(b), iab = t.vocab.find(a + b);
    if (ia == t.vocab.end() || ib == t.vocab.end() || iab == t.vocab.end()) throw bad("unknown token");
    t.merges.emplace(pair_key(ia->second, ib->second),
                     std::make_pair(static_cast<int32_t>(r), iab->second));  // first rank wins
  }

  // Longer specials first, so that the first hit at a position is the longest.
  std::sort(t.specials.begin(), t.specials.end(), [&](int32_t a, int32_t b) {
    const auto &sa = t.d.tokens[static_cast<size_t>(a)], &sb = t.d.tokens[static_cast<size_t>(b)];
    return sa.size() != sb.size() ? sa.size() > sb.size() : a < b;
  });
  for (int32_t id : {t.d.eos, t.d.eot})
    if (id >= 0) t.eog.push_back(id);
  for (const char* s : {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>"}) {
    auto it = t.vocab.find(s);
    if (it != t.vocab.end() && std::find(t.specials.begin(), t.specials.end(), it->second) != t.specials.end())
      t.eog.push_back(it->second);
  }

  Tokenizer tok;
  tok.impl_ = std::move(im);
  return tok;
}

void Tokenizer::Impl::bpe(std::string_view piece, std::vector<int32_t>& out) const {
  std::vector<int32_t> sym;
  sym.reserve(piece.size());
  for (unsigned char b : piece)
    if (byte_token[b] >= 0) sym.push_back(byte_token[b]);  // no unknown token: skip, as HF does
  while (sym.size() > 1) {
    int32_t best_rank = INT32_MAX, best_id = -1;
    size_t best = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = merges.find(pair_key(sym[i], sym[i + 1]));
      if (it != merges.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best_id = it->second.second;
        best = i;
      }
    }
    if (best_id < 0) break;
    sym[best] = best_id;
    sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  out.insert(out.end(), sym.begin(), sym.end());
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  const Impl& t = *impl_;
  std::vector<int32_t> out;
  auto plain = [&](std::string_view s) {
    for (auto [b, e] : pretokenize(s, t.pre_kind)) t.bpe(s.substr(b, e - b), out);
  };
  size_t start = 0, i = 0;
  while (parse_special && i < text.size()) {
    int32_t hit = -1;
    for (int32_t id : t.specials) {
      const std::string& s = t.d.tokens[static_cast<size_t>(id)];
      if (text.compare(i, s.size(), s) == 0) { hit = id; break; }
    }
    if (hit < 0) { ++i; continue; }
    plain(text.substr(start, i - start));
    out.push_back(hit);
    i += t.d.tokens[static_cast<size_t>(hit)].size();
    start = i;
  }
  plain(text.substr(start));
  return out;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= n_vocab())
    throw Error(impl_->d.source, "", "token id out of range", "0 .. " + std::to_string(n_vocab() - 1),
                std::to_string(id));
  return impl_->bytes[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    out += token_bytes(id);
  }
  return out;
}

int32_t Tokenizer::n_vocab() const { return static_cast<int32_t>(impl_->d.tokens.size()); }
int32_t Tokenizer::bos() const { return impl_->d.bos; }
int32_t Tokenizer::eos() const { return impl_->d.eos; }
bool Tokenizer::add_bos() const { return impl_->d.add_bos; }
bool Tokenizer::is_special(int32_t id) const {
  return std::find(impl_->specials.begin(), impl_->specials.end(), id) != impl_->specials.end();
}
bool Tokenizer::is_eog(int32_t id) const {
  return std::find(impl_->eog.begin(), impl_->eog.end(), id) != impl_->eog.end();
}
const std::string& Tokenizer::chat_template() const { return impl_->d.chat_template; }
const std::string& Tokenizer::pre() const { return impl_->d.pre; }

}  // namespace nvfp4

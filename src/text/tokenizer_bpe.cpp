// BPE as HF tokenizers' BPE model runs it: text -> added tokens split out -> normalizer ->
// pre-tokenizer pieces -> initial symbols (byte-level: GPT-2's byte -> code point map;
// SentencePiece-style: code points, unknown ones as <0xNN> byte tokens) -> merges: repeatedly the
// adjacent pair of lowest rank, the leftmost one on ties, until no pair has a merge.
#include <algorithm>
#include <cstdio>
#include <queue>

#include "nvfp4/error.h"
#include "text/tokenizer_impl.h"
#include "text/unicode.h"
#include "text/unicode_nfc.h"

namespace nvfp4 {

namespace {

const char* kDigitsFirst[] = {"smollm", "starcoder", "refact", "command-r", "codeshell",
                              "exaone", "minerva"};
const char* kGpt2[] = {"gpt-2", "gpt2", "mpt", "olmo", "jais", "trillion", "granite-docling"};
const char* kLlama3[] = {"llama-bpe", "llama3", "llama-v3"};
const char* kQwen2[] = {"qwen2", "deepseek-r1-qwen", "megrez"};

bool pick_pre(const std::string& pre, PreTokenizer& kind) {
  for (const char* p : kDigitsFirst) if (pre == p) { kind = PreTokenizer::digits_then_gpt2; return true; }
  for (const char* p : kGpt2) if (pre == p) { kind = PreTokenizer::gpt2; return true; }
  for (const char* p : kLlama3) if (pre == p) { kind = PreTokenizer::llama3; return true; }
  for (const char* p : kQwen2) if (pre == p) { kind = PreTokenizer::qwen2; return true; }
  if (pre == "deepseek-v3") { kind = PreTokenizer::deepseek3; return true; }
  return false;
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
  if (t.d.model != "gpt2" && t.d.model != "llama")
    throw Error(src, "", "unsupported tokenizer model (tokenizer.ggml.model)",
                "gpt2 (byte-level BPE) or llama (SentencePiece-style BPE)", t.d.model);
  t.spm = t.d.model == "llama";
  if (t.spm) {
    if (t.d.pre != "default")
      throw Error(src, "", "pre-tokenizer of a llama (SentencePiece-style) vocabulary", "default", t.d.pre);
    if (t.d.merges.empty())
      throw Error(src, "", "llama vocabulary without merges (SentencePiece by scores is not supported)",
                  "tokenizer.ggml.merges", "none");
    const std::string& sp = t.d.space_prefix;
    if (sp != "prepend" && sp != "always" && sp != "first" && sp != "never")
      throw Error(src, "", "space_prefix", "prepend, always, first or never", sp);
  } else if (!pick_pre(t.d.pre, t.pre_kind)) {
    throw Error(src, "", "unsupported pre-tokenizer (tokenizer.ggml.pre)",
                "smollm, starcoder, refact, command-r, codeshell, exaone, minerva, gpt-2, mpt, olmo, "
                "llama-bpe, qwen2, deepseek-r1-qwen, deepseek-v3", t.d.pre);
  }
  const int64_t n = static_cast<int64_t>(t.d.tokens.size());
  if (n == 0 || n > (1 << 30)) throw Error(src, "", "vocabulary size", "1 .. 2^30 tokens", std::to_string(n));
  if (!t.d.token_types.empty() && static_cast<int64_t>(t.d.token_types.size()) != n)
    throw Error(src, "", "tokenizer.ggml.token_type length", std::to_string(n),
                std::to_string(t.d.token_types.size()));
  const std::pair<int32_t, const char*> special[] = {{t.d.bos, "bos"}, {t.d.eos, "eos"}, {t.d.eot, "eot"},
                                                     {t.d.pad, "padding"}, {t.d.unk, "unknown"}};
  for (const auto& [id, role] : special)
    if (id < -1 || id >= n)  // named as GGUF stores it (HF directories' ids are found by their text)
      throw Error(src, std::string("tokenizer.ggml.") + role + "_token_id",
                  std::string("special token id 'tokenizer.ggml.") + role + "_token_id' (" + role +
                      ") out of the vocabulary",
                  "-1 or 0 .. " + std::to_string(n - 1), std::to_string(id));
  for (int32_t id : t.d.eog_ids)
    if (id < 0 || id >= n)
      throw Error(src, "", "end-of-generation id out of range", "0 .. " + std::to_string(n - 1),
                  std::to_string(id));
  auto type_of = [&](int32_t id) {
    return t.d.token_types.empty() ? TokenType::normal
                                   : static_cast<TokenType>(t.d.token_types[static_cast<size_t>(id)]);
  };

  // Added tokens: given (HF), or the control and user-defined tokens (GGUF).
  t.special.assign(static_cast<size_t>(n), 0);
  if (!t.d.added.empty()) {
    t.added = t.d.added;
  } else {
    for (int32_t id = 0; id < n; ++id) {
      const TokenType ty = type_of(id);
      if (ty == TokenType::control || ty == TokenType::user_defined) t.added.push_back({id});
    }
  }
  std::vector<uint8_t> is_added(static_cast<size_t>(n), 0);
  for (const AddedToken& a : t.added) {
    if (a.id < 0 || a.id >= n)
      throw Error(src, "", "added token id out of range", "0 .. " + std::to_string(n - 1), std::to_string(a.id));
    is_added[static_cast<size_t>(a.id)] = 1;
    if (a.special) t.special[static_cast<size_t>(a.id)] = 1;
  }

  // GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the rest to 256 + k.
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    t.byte_to_cp[b] = printable ? static_cast<uint32_t>(b) : next++;
    t.cp_to_byte[t.byte_to_cp[b]] = static_cast<uint8_t>(b);
  }

  t.vocab.assign(t.d.tokens, src);  // the first id wins on duplicates, as in HF
  size_t token_bytes = 0;
  for (const std::string& s : t.d.tokens) token_bytes += s.size();
  t.bytes.reserve(static_cast<size_t>(n), token_bytes);  // decoded: at most as long
  std::string b;
  for (int32_t id = 0; id < n; ++id) {
    const std::string& s = t.d.tokens[static_cast<size_t>(id)];
    b.clear();
    if (is_added[static_cast<size_t>(id)]) {
      b = s;
    } else if (t.spm) {
      unsigned v = 0;
      if (s.size() == 6 && std::sscanf(s.c_str(), "<0x%2X>", &v) == 1 && s[5] == '>') {
        b.assign(1, static_cast<char>(v));
      } else {
        for (size_t i = 0; i < s.size(); ++i) {
          if (s.compare(i, 3, "\xE2\x96\x81") == 0) { b += ' '; i += 2; }
          else b += s[i];
        }
      }
    } else {
      for (const auto& c : unicode::decode_utf8(s)) {
        auto it = t.cp_to_byte.find(c.cp);
        if (it != t.cp_to_byte.end()) b += static_cast<char>(it->second);
        else b.append(s, c.offset, c.len);  // not a byte-level code point: keep its UTF-8
      }
    }
    t.bytes.push_back(b, src);
  }
  for (int b = 0; b < 256; ++b) {
    std::string s;
    if (t.spm) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      s = buf;
    } else {
      unicode::append_utf8(t.byte_to_cp[b], s);
    }
    t.byte_token[b] = t.vocab.find(s);
  }

  t.merges.reserve(t.d.merges.size());
  for (size_t r = 0; r < t.d.merges.size(); ++r) {
    const std::string& m = t.d.merges[r];
    const size_t sp = m.find(' ', 1);
    auto bad = [&](const std::string& why) {
      return Error(src, "", "tokenizer.ggml.merges[" + std::to_string(r) + "]: " + why,
                   "two vocabulary tokens whose concatenation is a token", "'" + m + "'");
    };
    if (sp == std::string::npos) throw bad("no separating space");
    const std::string a = m.substr(0, sp), b = m.substr(sp + 1);
    const int32_t ia = t.vocab.find(a), ib = t.vocab.find(b), iab = t.vocab.find(a + b);
    if (ia < 0 || ib < 0 || iab < 0) throw bad("unknown token");
    t.merges.insert(ia, ib, static_cast<int32_t>(r), iab);  // first rank wins
  }

  // Added tokens by first byte, longer first, so that the first hit at a position is the longest.
  for (const AddedToken& a : t.added) {
    const std::string& s = t.d.tokens[static_cast<size_t>(a.id)];
    if (s.empty()) continue;
    t.added_by_byte[a.normalized ? 1 : 0][static_cast<uint8_t>(s[0])].push_back(a.id);
  }
  for (auto& pass : t.added_by_byte)
    for (auto& v : pass)
      std::sort(v.begin(), v.end(), [&](int32_t a, int32_t b) {
        const auto &sa = t.d.tokens[static_cast<size_t>(a)], &sb = t.d.tokens[static_cast<size_t>(b)];
        return sa.size() != sb.size() ? sa.size() > sb.size() : a < b;
      });
  for (int32_t id : {t.d.eos, t.d.eot})
    if (id >= 0) t.eog.push_back(id);
  for (int32_t id : t.d.eog_ids) t.eog.push_back(id);
  for (const char* s : {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>"}) {
    const int32_t id = t.vocab.find(s);
    if (id >= 0 && t.special[static_cast<size_t>(id)]) t.eog.push_back(id);
  }
  // Held by the tables now (vocab, bytes, merges), or needed only to build them.
  t.d.tokens = std::vector<std::string>();  // (not `= {}`: that keeps the capacity)
  t.d.merges = std::vector<std::string>();
  t.d.token_types = std::vector<int32_t>();
  t.d.scores = std::vector<float>();

  Tokenizer tok;
  tok.impl_ = std::move(im);
  return tok;
}

// HF's merge loop: a priority queue of candidate merges by (rank, position); a popped candidate
// whose pair has changed since it was queued is dropped.
void Tokenizer::Impl::merge(std::vector<int32_t>& sym) const {
  const size_t n = sym.size();
  if (n < 2) return;
  std::vector<int32_t> prev(n), next(n);
  std::vector<uint8_t> alive(n, 1);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  struct Cand { int32_t rank, pos, id; };
  auto later = [](const Cand& a, const Cand& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; };
  std::priority_queue<Cand, std::vector<Cand>, decltype(later)> q(later);
  auto push = [&](int32_t i) {
    if (i < 0 || next[static_cast<size_t>(i)] < 0) return;
    const auto* m = merges.find(sym[static_cast<size_t>(i)], sym[static_cast<size_t>(next[static_cast<size_t>(i)])]);
    if (m) q.push({m->rank, i, m->id});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int32_t>(i));
  while (!q.empty()) {
    const Cand c = q.top();
    q.pop();
    const auto i = static_cast<size_t>(c.pos);
    if (!alive[i] || next[i] < 0) continue;
    const auto j = static_cast<size_t>(next[i]);
    const auto* m = merges.find(sym[i], sym[j]);
    if (!m || m->id != c.id || m->rank != c.rank) continue;
    sym[i] = c.id;
    alive[j] = 0;
    next[i] = next[j];
    if (next[j] >= 0) prev[static_cast<size_t>(next[j])] = static_cast<int32_t>(i);
    push(prev[i]);
    push(static_cast<int32_t>(i));
  }
  size_t w = 0;
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) sym[w++] = sym[i];
  sym.resize(w);
}

void Tokenizer::Impl::byte_level_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (d.ignore_merges) {
    std::string s;
    for (unsigned char b : piece) unicode::append_utf8(byte_to_cp[b], s);
    const int32_t id = vocab.find(s);
    if (id >= 0) { out.push_back(id); return; }
  }
  std::vector<int32_t> sym;
  sym.reserve(piece.size());
  for (unsigned char b : piece)
    if (byte_token[b] >= 0) sym.push_back(byte_token[b]);  // no unknown token: skip, as HF does
  merge(sym);
  out.insert(out.end(), sym.begin(), sym.end());
}

void Tokenizer::Impl::encode_segment(std::string_view raw, bool at_start, std::vector<int32_t>& out) const {
  std::string norm = d.nfc ? unicode::nfc(raw) : std::string(raw);
  if (spm) norm = spm_normalize(norm, at_start);
  const std::string_view s = norm;
  split_added(
      s, true,
      [&](size_t b, size_t e) {
        const std::string_view sub = s.substr(b, e - b);
        if (spm) {
          spm_piece(sub, at_start && b == 0, out);
        } else {
          for (auto [pb, pe] : pretokenize(sub, pre_kind)) byte_level_piece(sub.substr(pb, pe - pb), out);
        }
      },
      [&](int32_t id) { out.push_back(id); });
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  const Impl& t = *impl_;
  std::vector<int32_t> out;
  if (!parse_special) {
    if (!text.empty()) t.encode_segment(text, true, out);
    return out;
  }
  t.split_added(
      text, false, [&](size_t b, size_t e) { t.encode_segment(text.substr(b, e - b), b == 0, out); },
      [&](int32_t id) { out.push_back(id); });
  return out;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= n_vocab())
    throw Error(impl_->d.source, "", "token id out of range", "0 .. " + std::to_string(n_vocab() - 1),
                std::to_string(id));
  return std::string(impl_->bytes[static_cast<size_t>(id)]);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    out += token_bytes(id);
  }
  size_t strip = 0;
  while (strip < out.size() && strip < static_cast<size_t>(std::max(0, impl_->d.decode_strip)) && out[strip] == ' ')
    ++strip;
  return out.substr(strip);
}

int32_t Tokenizer::n_vocab() const { return static_cast<int32_t>(impl_->vocab.size()); }
int32_t Tokenizer::bos() const { return impl_->d.bos; }
int32_t Tokenizer::eos() const { return impl_->d.eos; }
bool Tokenizer::add_bos() const { return impl_->d.add_bos; }
bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < n_vocab() && impl_->special[static_cast<size_t>(id)];
}
bool Tokenizer::is_eog(int32_t id) const {
  return std::find(impl_->eog.begin(), impl_->eog.end(), id) != impl_->eog.end();
}
const std::string& Tokenizer::chat_template() const { return impl_->d.chat_template; }
const std::string& Tokenizer::pre() const { return impl_->d.pre; }

}  // namespace nvfp4

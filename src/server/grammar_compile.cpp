// xgrammar compiled against the model's vocabulary, and walked per slot (see grammar_compile.h).
#include "server/grammar_compile.h"

#include <dlpack/dlpack.h>
#include <xgrammar/xgrammar.h>

#include "server/api_error.h"

namespace nvfp4::server {

OutputCompiler::OutputCompiler(const Tokenizer& tok) : tok_(tok) {
  for (int32_t id = 0; id < tok_.n_vocab(); ++id) {
    if (tok_.is_eog(id)) stop_.push_back(id);
    else if (tok_.is_special(id)) special_.push_back(id);
  }
}
OutputCompiler::~OutputCompiler() = default;

xgrammar::GrammarCompiler& OutputCompiler::compiler_for(const std::string& markers) {
  // The special tokens the markers spell (none for most grammars): one vocabulary per set.
  std::vector<int32_t> kept;
  std::string key;
  for (int32_t id : special_) {
    const std::string t = tok_.token_bytes(id);
    if (!markers.empty() && !t.empty() && markers.find(t) != std::string::npos) {
      kept.push_back(id);
      key += std::to_string(id) + ",";
    }
  }
  auto& c = compilers_[key];
  if (c) return *c;
  std::vector<std::string> vocab(static_cast<size_t>(tok_.n_vocab()));
  for (int32_t id = 0; id < tok_.n_vocab(); ++id)
    if (!tok_.is_special(id) || tok_.is_eog(id)) vocab[static_cast<size_t>(id)] = tok_.token_bytes(id);
  for (int32_t id : kept) vocab[static_cast<size_t>(id)] = tok_.token_bytes(id);
  // (Other special tokens stay "": xgrammar never allows them.)
  xgrammar::TokenizerInfo info(vocab, xgrammar::VocabType::RAW, tok_.n_vocab(), stop_, false);
  // One thread: the compile runs on the request's HTTP thread, beside the stepping thread. The
  // cache of compiled grammars (a client that repeats its schema compiles it once) is bounded.
  c = std::make_unique<xgrammar::GrammarCompiler>(info, /*max_threads=*/1, /*cache_enabled=*/true,
                                                  /*max_memory_bytes=*/int64_t{256} << 20);
  return *c;
}

std::shared_ptr<const CompiledOutput> OutputCompiler::compile(const GrammarSpec& spec) {
  auto out = std::make_shared<CompiledOutput>();
  try {
    std::lock_guard lk(mu_);
    auto& c = compiler_for(spec.markers);
    out->grammar = std::make_shared<const xgrammar::CompiledGrammar>(c.CompileGrammar(*spec.grammar));
  } catch (const std::exception& e) {
    throw ApiError(400, "'" + spec.field + "' cannot be compiled: " + e.what(), spec.field, "invalid_value");
  }
  out->stop = stop_;
  // A grammar whose language is empty allows no first token.
  OutputMatcher m(out);
  std::vector<uint8_t> allowed;
  if (m.fill(allowed, tok_.n_vocab()) == 0)
    throw ApiError(400, "'" + spec.field + "' admits no output (no token can start it)", spec.field, "invalid_value");
  return out;
}

bool grammar_accepts(const GrammarSpec& spec, const std::string& text) {
  std::vector<std::string> vocab;
  for (int c = 0; c < 256; ++c) vocab.emplace_back(1, static_cast<char>(c));
  vocab.emplace_back("</s>");
  xgrammar::GrammarCompiler c(xgrammar::TokenizerInfo(vocab, xgrammar::VocabType::RAW, 257, std::vector<int32_t>{256}),
                              1, false);
  xgrammar::GrammarMatcher m(c.CompileGrammar(*spec.grammar));
  return m.AcceptString(text) && m.IsCompleted();
}

OutputMatcher::OutputMatcher(std::shared_ptr<const CompiledOutput> g)
    : g_(std::move(g)), m_(std::make_unique<xgrammar::GrammarMatcher>(*g_->grammar)) {
  bits_.resize(static_cast<size_t>(xgrammar::GetBitmaskSize(g_->grammar->GetTokenizerInfo().GetVocabSize())));
}
OutputMatcher::~OutputMatcher() = default;
OutputMatcher::OutputMatcher(OutputMatcher&&) noexcept = default;

void OutputMatcher::compute() {
  if (fresh_) return;
  DLTensor t{};
  int64_t shape = static_cast<int64_t>(bits_.size());
  t.data = bits_.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = xgrammar::GetBitmaskDLType();
  t.shape = &shape;
  t.strides = nullptr;
  t.byte_offset = 0;
  m_->FillNextTokenBitmask(&t);
  fresh_ = true;
}

int64_t OutputMatcher::fill(std::vector<uint8_t>& allowed, int64_t n_vocab) {
  compute();
  allowed.assign(static_cast<size_t>(n_vocab), 0);
  const int64_t nv = std::min<int64_t>(n_vocab, static_cast<int64_t>(bits_.size()) * 32);
  int64_t n = 0;
  for (int64_t w = 0; w * 32 < nv; ++w) {
    const uint32_t b = static_cast<uint32_t>(bits_[static_cast<size_t>(w)]);
    if (!b) continue;
    for (int64_t i = 0; i < 32 && w * 32 + i < nv; ++i)
      if (b >> i & 1u) {
        allowed[static_cast<size_t>(w * 32 + i)] = 1;
        ++n;
      }
  }
  return n;
}

bool OutputMatcher::accept(int32_t tok) {
  fresh_ = false;
  return m_->AcceptToken(tok);
}

bool OutputMatcher::done() {
  if (m_->IsTerminated()) return true;
  if (!m_->IsCompleted()) return false;
  compute();  // kept for the next step's mask
  for (size_t w = 0; w < bits_.size(); ++w) {
    uint32_t b = static_cast<uint32_t>(bits_[w]);
    for (int32_t s : g_->stop)
      if (static_cast<size_t>(s) / 32 == w) b &= ~(1u << (s % 32));
    if (b) return false;
  }
  return true;
}

}  // namespace nvfp4::server

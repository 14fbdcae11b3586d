// Constrained decoding with xgrammar (third_party/xgrammar): a request's GrammarSpec
// (output_grammar.h) compiled against the model's vocabulary, and the matcher a slot walks with
// it. The vocabulary is handed to xgrammar as the bytes each token writes (Tokenizer::token_bytes:
// byte-level BPE's byte map and SentencePiece's ▁ and <0xHH> byte fallback already undone, as
// the output's text is made), so xgrammar's vocabulary type is RAW whatever the model's is.
// Special tokens are left out (their text is never part of a grammar's language), except those
// whose text a tool call's markers hold ([TOOL_CALLS]) in the grammars of such calls;
// end-of-generation tokens are allowed when the grammar's text is whole.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nvfp4/tokenizer.h"
#include "server/output_grammar.h"

namespace xgrammar {
class CompiledGrammar;
class GrammarCompiler;
class GrammarMatcher;
}  // namespace xgrammar

namespace nvfp4::server {

// A grammar compiled for one vocabulary; shared by the jobs that use it.
struct CompiledOutput {
  std::shared_ptr<const xgrammar::CompiledGrammar> grammar;
  std::vector<int32_t> stop;  // the end-of-generation tokens
};

class OutputCompiler {
 public:
  explicit OutputCompiler(const Tokenizer& tok);
  ~OutputCompiler();
  // Thread-safe. Throws ApiError(400) naming spec.field when the grammar admits no output.
  std::shared_ptr<const CompiledOutput> compile(const GrammarSpec& spec);

 private:
  xgrammar::GrammarCompiler& compiler_for(const std::string& markers);
  const Tokenizer& tok_;
  std::vector<int32_t> stop_, special_;  // end-of-generation tokens; the other special ones
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<xgrammar::GrammarCompiler>> compilers_;  // by the special tokens kept
};

// Whether `text` is a whole output of the grammar, matched byte by byte (no model: tests and the
// fuzz target).
bool grammar_accepts(const GrammarSpec& spec, const std::string& text);

// One generation's walk through its grammar (the stepping thread's).
class OutputMatcher {
 public:
  explicit OutputMatcher(std::shared_ptr<const CompiledOutput> g);
  ~OutputMatcher();
  OutputMatcher(OutputMatcher&&) noexcept;
  // allowed[id] = 1 when token id may come next, else 0 (resized to n_vocab). Returns how many may.
  int64_t fill(std::vector<uint8_t>& allowed, int64_t n_vocab);
  // Takes a token the mask allowed; false when the grammar refuses it.
  bool accept(int32_t tok);
  // The text is whole and nothing but the end of generation may follow.
  bool done();
  // Computes the mask of the current state ahead of fill() (which then only reads it): the
  // scheduler calls it on a helper thread while the forward pass runs. Not to be called while
  // another call on this matcher runs.
  void prepare() { compute(); }

 private:
  void compute();
  std::shared_ptr<const CompiledOutput> g_;
  std::unique_ptr<xgrammar::GrammarMatcher> m_;
  std::vector<int32_t> bits_;  // xgrammar's bitmask of the next token
  bool fresh_ = false;         // bits_ is the mask of the current state
};

}  // namespace nvfp4::server

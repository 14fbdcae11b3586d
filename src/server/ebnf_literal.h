// EBNF text for the grammars the server builds (output_grammar.cpp, gemma4_call_ebnf.cpp,
// qwen_xml_call_ebnf.cpp).
#pragma once
#include <string>
#include <vector>

namespace nvfp4::server {

// An EBNF string literal of `s` (UTF-8 passes as it is; quotes, backslashes and controls escaped).
std::string ebnf_literal(const std::string& s);

// Rules defining `name` as any text (newlines included) that holds none of `words`; every word
// starts with the same character, which appears nowhere else in any of them ('<' of "</think>",
// "</parameter>"), and no word is a prefix of another. Helper rules are named name + "_...".
std::string ebnf_text_without(const std::string& name, const std::vector<std::string>& words);

}  // namespace nvfp4::server

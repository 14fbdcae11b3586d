// EBNF text for the grammars the server builds (output_grammar.cpp, gemma4_call_ebnf.cpp,
// qwen_xml_call_ebnf.cpp).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nvfp4::server {

// An EBNF string literal of `s` (UTF-8 passes as it is; quotes, backslashes and controls escaped).
std::string ebnf_literal(const std::string& s);

// Rules defining `name` as any text (newlines included) that holds none of `words`; every word
// starts with the same character, which appears nowhere else in any of them ('<' of "</think>",
// "</parameter>"), and no word is a prefix of another. Helper rules are named name + "_...".
std::string ebnf_text_without(const std::string& name, const std::vector<std::string>& words);

// The characters of a string value whose schema bounds its length (`minLength` / `maxLength`, in
// code points as JSON Schema counts them, each at most kMaxBoundedLength): "[^<]{m,n}" (or
// "[^<]{m,}"), any character but '<', which begins every end marker of the call formats that use
// it. Empty when the schema bounds nothing or bounds it past what is enforced (then the caller's
// unbounded text rule applies).
// Bounds up to kRegexMaxRepeat are written Regex("[^<]{m,n}"), whose masks xgrammar caches
// (ebnf_literal.cpp).
inline constexpr long long kMaxBoundedLength = 4096;
inline constexpr long long kRegexMaxRepeat = 128;
std::string ebnf_bounded_chars(const nlohmann::ordered_json& schema);

// (Numbers in the call grammars are bounded the same way, to what the parsers convert back to int64
// and to a finite double: at most 18 integer digits, 18 fraction digits and a two-digit exponent;
// an unbounded run, 10^400, would come back as a string or a null instead of the number asked for.)

}  // namespace nvfp4::server

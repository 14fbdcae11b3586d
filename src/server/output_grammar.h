// What a request constrains its output to, as a grammar of xgrammar (third_party/xgrammar, its
// C++ core; README "Structured output"): response_format of chat and completions ({"type":
// "text"}, {"type": "json_object"}, or {"type": "json_schema", "json_schema": {"name", "schema",
// "strict", "description"}} as OpenAI defines them), the Responses API's text.format (the same
// with the json_schema fields beside "type"), llama.cpp's `grammar` (GBNF) and `json_schema`,
// vLLM's `guided_json` / `guided_regex` / `guided_grammar` / `guided_choice` and
// `structured_outputs` {json, regex, grammar, choice}, and a tool call that tool_choice
// "required" or a named function asks for, in the chat template's own format.
// Nothing here needs the model: the grammar is compiled against its vocabulary later
// (grammar_compile.h). Throws ApiError(400) naming the field.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/tool_calls.h"

namespace xgrammar {
class Grammar;
}

namespace nvfp4::server {

struct GrammarSpec {
  std::shared_ptr<const xgrammar::Grammar> grammar;
  std::string field;  // the request's field, named in errors found when compiling it
  // Special tokens whose text a tool call's markers hold ([TOOL_CALLS]) may match those markers.
  std::string markers;
};

// `field` is the object's name in errors ("response_format", "text.format"); `flat`: the
// Responses shape (name and schema beside type). Null for {"type": "text"}.
std::shared_ptr<const GrammarSpec> response_format_grammar(const nlohmann::ordered_json& rf, const std::string& field,
                                                           bool flat);

// A request body's output constraint, from whichever of the fields above it has (at most one;
// two are a 400 naming the second). Null when none.
std::shared_ptr<const GrammarSpec> body_output_grammar(const std::string& body);

// A JSON schema document (`path` names it in errors): refused when it uses what the grammar would
// not enforce (schema_guard.h), else converted.
std::shared_ptr<const GrammarSpec> json_schema_grammar(const nlohmann::ordered_json& schema, const std::string& path);

// One call of a tool in `tools_json` (a validated tools array), of the one named `only` when not
// empty, written as format `f` writes a call: Hermes <tool_call>\n{"name", "arguments"}\n</tool_call>,
// Llama 3 {"name", "parameters"}, Mistral [TOOL_CALLS][{"name", "arguments"}], Gemma 4's
// <|tool_call>call:NAME{...}<tool_call|> (gemma4_call_ebnf.h), Qwen3.5/3.6's XML call
// (qwen_xml_call_ebnf.h), Muse Glimmer's message to=NAME (its reasoning message first or not,
// atem_call_ebnf.h). Null when the template shows no call format: such requests stay
// unconstrained. The JSON formats' parameters schemas are converted (400 naming
// tools[i].function.parameters). `reasoning_close`: the prompt left a reasoning block open (Qwen3.5's
// "<think>\n"): any reasoning first, then this marker (e.g. "</think>") and blank space, then the call.
std::shared_ptr<const GrammarSpec> tool_call_grammar(ToolFormat f, const std::string& tools_json,
                                                     const std::string& only, const std::string& reasoning_close = "");

}  // namespace nvfp4::server

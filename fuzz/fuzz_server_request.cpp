// libFuzzer target for the server's request parsing and text stream: any body is parsed as a
// completion, chat, tokenize, detokenize, Responses (/v1/responses), Messages (/v1/messages) and
// embeddings request, each either accepted or refused with
// ApiError 400; the same bytes, read as a request head (a method line, then "name: value" lines),
// go through the framing check (accepted with a length within the limit, or refused 400, 405, 413
// or 501); cut into tokens, they go through a TextStream with stop strings, whose output must be
// valid UTF-8. The bytes are also a model's chat reply for the tool call parser of each family
// (with and without reasoning; Muse Glimmer's messages too): the reply parsed whole and pushed in 3-byte pieces must give the
// same reasoning, content and calls, and every call's arguments must be a JSON object. Matched by
// xgrammar (grammar_compile.h) against the json_object grammar and the request's own constraint
// (response_format, grammar, guided_*: the body's schema, GBNF or regex parsed by xgrammar), the
// bytes that json_object calls a whole document must parse as a JSON object.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "server/api_error.h"
#include "server/embeddings.h"
#include "server/grammar_compile.h"
#include "server/output_grammar.h"
#include "server/messages_request.h"
#include "server/request.h"
#include "server/request_framing.h"
#include "server/responses_request.h"
#include "server/text_stream.h"
#include "server/tool_calls.h"

namespace {

nvfp4::server::ChatDelta run_parser(const nvfp4::server::ChatParseOptions& o, const std::string& text, size_t piece) {
  nvfp4::server::ChatOutputParser p(o, 1);
  nvfp4::server::ChatDelta d;
  auto add = [&](nvfp4::server::ChatDelta x) {
    d.reasoning += x.reasoning;
    d.content += x.content;
    for (auto& c : x.calls) d.calls.push_back(std::move(c));
  };
  for (size_t i = 0; i < text.size(); i += piece) add(p.push(text.substr(i, piece)));
  add(p.finish());
  return d;
}

void check_tool_parsers(const std::string& text) {
  using namespace nvfp4::server;
  for (ToolFormat f : {ToolFormat::None, ToolFormat::Hermes, ToolFormat::QwenXml, ToolFormat::Llama3, ToolFormat::Mistral,
                        ToolFormat::Gemma4, ToolFormat::Atem}) {
    for (int r = 0; r < 3; ++r) {
      ChatParseOptions o;
      o.tools = f;
      if (f == ToolFormat::Gemma4) {  // (its reasoning channel and label)
        o.think_open = "<|channel>";
        o.think_close = "<channel|>";
        o.think_label = "thought\n";
      }
      if (f == ToolFormat::QwenXml || f == ToolFormat::Atem)
        o.tools_json = R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{)"
                       R"("s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},"o":{"type":"object"}}}}}])";
      o.reasoning = r > 0;
      o.in_reasoning = r == 2;
      o.channels = f == ToolFormat::Atem && r > 0;  // Muse Glimmer's messages (chat_channels.cpp)
      const ChatDelta a = run_parser(o, text, text.size() + 1), b = run_parser(o, text, 3);
      if (a.reasoning != b.reasoning || a.content != b.content || a.calls.size() != b.calls.size()) std::abort();
      for (size_t i = 0; i < a.calls.size(); ++i) {
        if (a.calls[i].name != b.calls[i].name || a.calls[i].arguments != b.calls[i].arguments) std::abort();
        const auto j = nlohmann::json::parse(a.calls[i].arguments, nullptr, false);
        if (j.is_discarded() || !j.is_object() || a.calls[i].id.size() != 9) std::abort();
      }
    }
  }
}

// A text the json_object grammar calls whole parses as an object (xgrammar's JSON is sound); any
// other grammar (a GBNF, regex or schema from the body, parsed by xgrammar) is matched against
// the body without crashing.
void check_grammar(const nvfp4::server::GrammarSpec& g, const std::string& text, bool object) {
  if (!nvfp4::server::grammar_accepts(g, text) || !object) return;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nvfp4::server;
  const std::string body(reinterpret_cast<const char*>(data), size);
  const auto object = response_format_grammar(nlohmann::ordered_json{{"type", "json_object"}}, "f", false);
  check_grammar(*object, body, true);
  for (int kind = 0; kind < 7; ++kind) {
    try {
      if (kind < 2) {
        const GenRequest r = parse_gen_request(body, kind == 1);
        if (r.grammar) check_grammar(*r.grammar, body, false);
      }
      else if (kind == 2) (void)parse_tokenize_request(body);
      else if (kind == 3) (void)parse_detokenize_request(body);
      else if (kind == 4) (void)responses_messages(parse_responses_request(body), {});
      else if (kind == 5) (void)parse_messages_request(body);
      else (void)parse_embeddings_request(body);
    } catch (const ApiError& e) {
      if (e.status != 400) std::abort();
      (void)error_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    }
  }
  {
    std::vector<std::pair<std::string, std::string>> headers;
    std::string method;
    size_t at = 0;
    for (int line = 0; at <= body.size() && line < 64; ++line) {
      size_t end = body.find('\n', at);
      if (end == std::string::npos) end = body.size();
      const std::string l = body.substr(at, end - at);
      at = end + 1;
      if (line == 0) {
        method = l.substr(0, l.find(' '));
        continue;
      }
      const size_t colon = l.find(':');
      if (colon != std::string::npos) headers.emplace_back(l.substr(0, colon), l.substr(colon + 1));
    }
    try {
      const Framing f = check_framing(method, headers, 4096);
      if ((!f.chunked && f.length > 4096) || (f.has_body && method != "POST")) std::abort();
    } catch (const ApiError& e) {
      if (e.status != 400 && e.status != 405 && e.status != 413 && e.status != 501) std::abort();
      (void)error_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    }
    (void)json_too_deep(body, kMaxJsonDepth);
  }
  TextStream t({"\n\n", "\xC3\xA9", "END"});
  std::string out;
  for (size_t i = 0; i < size; i += 3) out += t.push(body.substr(i, 3));
  out += t.finish();
  if (utf8_sanitize(out) != out) std::abort();  // not valid UTF-8
  check_tool_parsers(body);
  return 0;
}

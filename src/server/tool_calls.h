// The model's chat output split as OpenAI's API returns it: reasoning (<think>...</think>) as
// reasoning_content, tool calls in the checkpoint family's own format as tool_calls, the rest as
// content. Incremental: text is pushed as the model makes it; what cannot be part of a marker or
// of an unfinished call is given back at once (a stream's deltas), the rest when it can be told.
// A call whose text does not parse stays in the content as the model wrote it: nothing is lost.
#pragma once
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace nvfp4::server {

enum class ToolFormat {
  None,     // no tool calls parsed
  Hermes,   // Qwen2.5/Qwen3/QwQ, Hermes 2 Pro/3: <tool_call>{"name": ..., "arguments": {...}}</tool_call>
  QwenXml,  // Qwen3.5/3.6, Qwen3-Coder: <tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>
  Llama3,   // Llama 3.1-3.3: the whole reply is {"name": ..., "parameters": {...}} (or <|python_tag|>...)
  Mistral,  // [TOOL_CALLS][{"name": ..., "arguments": {...}}] (Nemo) or [TOOL_CALLS]name[ARGS]{...} (Small 3.2)
  Gemma4,   // Gemma 4: <|tool_call>call:NAME{key:<|"|>text<|"|>,n:5}<tool_call|>
  Atem,     // Muse Glimmer: a message to=NAME whose body is <atem:function_calls><atem:invoke name="NAME">
            // <atem:parameter name="KEY">VALUE</atem:parameter>...</atem:invoke></atem:function_calls>
};

// The family a chat template's own text shows (its tool call markers); None when it shows none.
ToolFormat tool_format_of(const std::string& template_text);
const char* tool_format_name(ToolFormat f);

struct ParsedToolCall {
  std::string id;         // 9 letters and digits (Mistral's templates accept no other)
  std::string name;
  std::string arguments;  // JSON object text
};

// What may be sent now.
struct ChatDelta {
  std::string reasoning, content;
  std::vector<ParsedToolCall> calls;
  bool empty() const { return reasoning.empty() && content.empty() && calls.empty(); }
};

// Function name -> parameter name -> the JSON schema "type" of that parameter, from a request's
// tools: how a QwenXml call's parameter text becomes a JSON value (vLLM's qwen3_coder parser's rule).
using ParamTypes = std::map<std::string, std::map<std::string, std::string>>;
ParamTypes param_types_of(const std::string& tools_json);

struct ChatParseOptions {
  ToolFormat tools = ToolFormat::None;
  std::string tools_json;     // the request's tools as JSON text (QwenXml: the parameters' types)
  bool reasoning = false;     // split think_open...think_close off as reasoning
  bool in_reasoning = false;  // the prompt ends with think_open: the output starts inside it
  // The reasoning's markers: <think> and </think>, or Gemma 4's <|channel> and <channel|> with
  // the channel's label "thought\n" after the opener (not part of the reasoning).
  std::string think_open = "<think>", think_close = "</think>", think_label;
  // Muse Glimmer: the reply is messages, each a header ` to=RECIPIENT` (after <|start|>assistant,
  // which the generation prompt holds for the first) then <|message|> and a body that ends at
  // <|eom|> (another message follows) or the reply's end. To self: reasoning; to user (or no
  // recipient): content; to anyone else: a tool call, its body an Atem block.
  bool channels = false;
};

// What a chat reply is parsed for: the template's tool call format when the request offers tools
// (`tools_json` not empty), <think> reasoning when the template knows it (the reply starts inside
// it when the prompt ends with <think>, as Qwen3.5/3.6's, DeepSeek R1's and QwQ's generation
// prompts do unless enable_thinking is false), or Gemma 4's <|channel>thought ... <channel|>.
ChatParseOptions chat_parse_options(const std::string& template_text, const std::string& tools_json,
                                    const std::string& prompt);

class ChatOutputParser {
 public:
  ChatOutputParser(ChatParseOptions o, uint64_t id_seed);
  ChatDelta push(std::string_view text);
  ChatDelta finish();  // at the end of generation: everything held back
  int n_calls() const { return n_calls_; }

 private:
  enum class Mode { Content, Reasoning, Block, Tail, Header, Body };
  enum class Sink { Reasoning, Content, Call };
  void run(ChatDelta& d, bool at_end);
  bool run_channels(ChatDelta& d, bool at_end);  // chat_channels.cpp; false: wait for more text
  void end_message(ChatDelta& d);
  void emit_content(ChatDelta& d, std::string_view s);
  void close_block(ChatDelta& d, const std::string& body, bool closed);
  void close_tail(ChatDelta& d);
  std::string new_id();

  ChatParseOptions o_;
  ParamTypes types_;  // QwenXml: from o_.tools_json
  std::mt19937_64 rng_;
  std::string buf_;      // text not yet given back
  std::string opener_;   // the marker that began a Block/Tail (given back with it when it does not parse)
  bool label_pending_ = false;  // reasoning began: its label (think_label) may come first
  Mode mode_ = Mode::Content;
  bool strip_ws_ = false;     // drop whitespace before the next content (after </think>, a call)
  bool said_content_ = false; // content given back already (Llama 3's JSON counts only at the start)
  int n_calls_ = 0;
  Sink sink_ = Sink::Content;  // channels: where the current message's body goes
  std::string call_body_;      // channels: a tool message's body, read when the message ends
};

// The length of the longest suffix of s that is a proper prefix of m (text held back while it
// may still become the marker m).
size_t partial_suffix(std::string_view s, std::string_view m);
// s without the blanks (space, newline, tab, CR) at either end.
std::string_view trim_ws(std::string_view s);

// Tool calls in a text of `f`'s format with no other text around them (a Block's or Tail's body):
// the calls, or empty when the text is not that (then it is content). `types` serves QwenXml.
std::vector<ParsedToolCall> parse_tool_calls(ToolFormat f, std::string_view body, const ParamTypes& types = {});

// QwenXml's body of one <tool_call>: <function=NAME> then <parameter=KEY>\nVALUE\n</parameter> each,
// then </function>. A value becomes JSON by its parameter's schema type: string (and a parameter
// the schema does not name) as text, integer/number/boolean as such, others parsed as JSON (left
// as text when they are not); "null" is null whatever the type.
std::vector<ParsedToolCall> qwen_xml_calls(std::string_view body, const ParamTypes& types);

// Atem's body of one tool message (Muse Glimmer): <atem:function_calls> holding one or more
// <atem:invoke name="NAME">, each parameter's text a JSON value by its schema type as for QwenXml
// (the template writes strings as they are, booleans true/false, null, objects and lists as JSON).
std::vector<ParsedToolCall> atem_calls(std::string_view body, const ParamTypes& types);

// Gemma4's body of one <|tool_call> block: call:NAME{ARGS} in the template's argument format
// (tool_calls_gemma4.cpp says which), the arguments as a JSON object.
std::vector<ParsedToolCall> gemma4_calls(std::string_view body);

}  // namespace nvfp4::server

// Chat prompts from a model's own chat template (Jinja2, as tokenizer.chat_template holds it),
// rendered as transformers' apply_chat_template renders it: jinja2 with trim_blocks and
// lstrip_blocks, tojson = json.dumps(ensure_ascii=False), raise_exception and strftime_now.
// The interpreter covers the subset chat templates use; anything else is refused when the
// template is parsed (nvfp4::Error naming the template, line and construct), never guessed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace nvfp4 {

namespace jinja {
struct Program;
}

// A function call an assistant turn made (OpenAI's tool_calls[i]). Templates see
// {"id", "type": "function", "function": {"name", "arguments"}}, arguments as a dict when the text
// is a JSON object (as vLLM gives them; templates print them with tojson), else as the text.
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, as OpenAI's API carries it
};

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}
  std::string role;     // "system", "user", "assistant", "tool"
  std::string content;
  // Templates see these keys only when set (as a message dict without them). A null content (an
  // assistant turn of tool calls alone) is "", as vLLM gives it: templates fail on None.
  std::vector<ChatToolCall> tool_calls;  // assistant
  std::optional<std::string> tool_call_id, name;  // tool results: the call answered, the function
  std::optional<std::string> reasoning_content;   // assistant: its reasoning (Qwen3 re-renders it)
};

// The time strftime_now() formats (transformers reads the clock; a fixed one makes prompts
// reproducible).
struct ChatDate {
  int year = 2024, month = 1, day = 1, hour = 0, minute = 0, second = 0;
};

struct ChatRenderOptions {
  bool add_generation_prompt = true;
  std::string bos_token, eos_token;
  // Extra template variables (e.g. enable_thinking for Qwen3), as apply_chat_template's kwargs.
  std::map<std::string, std::variant<std::string, bool>> vars;
  // Extra template variables given as JSON text (chat_template_kwargs, tool_choice): name -> value.
  std::map<std::string, std::string> json_vars;
  // The tools (a JSON array of OpenAI tool objects); empty: tools is None.
  std::string tools_json;
  std::optional<ChatDate> date;  // none: the local time now
  // Runaway guards: output bytes (and any one string), evaluation steps, nested calls.
  size_t max_output = size_t{1} << 24;
  uint64_t max_steps = 50'000'000;
  int max_depth = 64;
};

// A JSON object of template variables (the command line's --chat-template-kwargs, as a request's
// chat_template_kwargs: '{"enable_thinking": false}') -> ChatRenderOptions::json_vars entries.
// Throws nvfp4::Error naming `source` when it is not a JSON object of variable names.
std::map<std::string, std::string> chat_template_kwargs(const std::string& json_text, const std::string& source);

class ChatTemplate {
 public:
  // Parses `text`; throws nvfp4::Error naming `source` for an empty or unsupported template.
  static ChatTemplate parse(const std::string& text, const std::string& source);
  // A template shipped with nvfp4 (real model templates, see builtin_names()); throws
  // nvfp4::Error listing the known names for another.
  static ChatTemplate builtin(const std::string& name);
  static std::vector<std::string> builtin_names();

  // The prompt for `messages`. Throws nvfp4::Error for what the template refuses
  // (raise_exception), undefined values used as jinja2 would fail on them, and limits.
  std::string render(const std::vector<ChatMessage>& messages, const ChatRenderOptions& o) const;

  const std::string& text() const { return text_; }
  // Whether the template uses `tools` at all (a template that does not ignores them).
  bool takes_tools() const;
  const std::string& source() const { return source_; }
  // The name of the built-in template with exactly this text (a checkpoint's own may be one), or "".
  std::string builtin_name() const;
  // For logs: where the template came from, and the built-in it equals.
  std::string describe() const;

 private:
  std::shared_ptr<const jinja::Program> prog_;
  std::string text_, source_;
};

}  // namespace nvfp4

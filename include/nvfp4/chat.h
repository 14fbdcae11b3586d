// Chat prompts in the ChatML format (<|im_start|>role\ncontent<|im_end|>\n), which SmolLM2's,
// Qwen's and many instruct models' chat templates produce. No Jinja engine: the template text is
// recognized, and its default system message (inserted when the conversation has none) is
// read from it. Templates of other formats are refused.
#pragma once
#include <string>
#include <vector>

namespace nvfp4 {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant"
  std::string content;
};

struct ChatFormat {
  std::string default_system;  // empty: the template inserts no system message
};

// Recognizes a ChatML template. Throws nvfp4::Error (naming `source`) for an empty or other template.
ChatFormat parse_chat_template(const std::string& template_text, const std::string& source = "");

// The prompt text the template renders for `messages`; with add_generation_prompt it ends with
// "<|im_start|>assistant\n".
std::string format_chat(const ChatFormat& fmt, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt);

}  // namespace nvfp4

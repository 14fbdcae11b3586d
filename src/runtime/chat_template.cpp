// ChatML recognition. A template qualifies when it writes '<|im_start|>' + message['role'] + '\n'
// + message['content'] + '<|im_end|>' + '\n' per message (spacing and quote style vary between
// models, so the test is on the tokens that matter) and an assistant generation prompt. A default
// system message is the literal between '<|im_start|>system\n' and '<|im_end|>' in the template.
#include <algorithm>

#include "nvfp4/chat.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {
std::string strip_spaces(const std::string& s) {
  std::string o;
  for (char c : s)
    if (c != ' ') o += c;
  return o;
}
// The template source writes newlines either raw or as the two characters \n inside a string.
std::string unescape(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') { o += '\n'; ++i; }
    else o += s[i];
  }
  return o;
}
}  // namespace

ChatFormat parse_chat_template(const std::string& tmpl, const std::string& source) {
  if (tmpl.empty())
    throw Error(source, "", "no chat template (tokenizer.chat_template)", "a ChatML template",
                "none; run without --chat");
  std::string t = strip_spaces(unescape(tmpl));
  std::replace(t.begin(), t.end(), '"', '\'');
  const bool per_message =
      t.find("'<|im_start|>'+message['role']+'\n'+message['content']+'<|im_end|>'") != std::string::npos ||
      t.find("'<|im_start|>'+message.role+'\n'+message.content+'<|im_end|>'") != std::string::npos;
  const bool gen = t.find("<|im_start|>assistant\n") != std::string::npos;
  if (!per_message || !gen)
    throw Error(source, "", "unsupported chat template", "ChatML (<|im_start|>role\\n...<|im_end|>)",
                "another format; run without --chat and write the prompt yourself");
  ChatFormat f;
  const std::string raw = unescape(tmpl);
  const std::string open = "<|im_start|>system\n";
  const size_t a = raw.find(open);
  if (a != std::string::npos) {
    const size_t b = raw.find("<|im_end|>", a);
    if (b != std::string::npos) f.default_system = raw.substr(a + open.size(), b - a - open.size());
    // Template code between the markers (a system message built from variables) is no literal.
    if (f.default_system.find_first_of("'\"{}+") != std::string::npos) f.default_system.clear();
  }
  return f;
}

std::string format_chat(const ChatFormat& fmt, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt) {
  std::string out;
  if (!fmt.default_system.empty() && !messages.empty() && messages[0].role != "system")
    out += "<|im_start|>system\n" + fmt.default_system + "<|im_end|>\n";
  for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace nvfp4

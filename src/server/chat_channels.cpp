// ChatOutputParser for replies made of messages (Muse Glimmer, ChatParseOptions::channels): each
// message a header ` to=RECIPIENT`, then <|message|>, then its body up to <|eom|> (the next message
// follows, opened by <|start|>assistant) or the reply's end (<|eot|> is a stop token, so not in
// the text; it is taken as an end too). What the template writes for an assistant turn:
//   <|start|>assistant to=self<|message|>REASONING<|eom|>
//   <|start|>assistant to=NAME<|message|><atem:function_calls>...</atem:function_calls><|eom|> (a call each)
//   <|start|>assistant to=user<|message|>ANSWER<|eot|>
// The generation prompt ends with <|start|>assistant, so a reply starts at a header. Reasoning and
// content bodies are sent as they come; a tool message's body is read when it ends (atem_calls):
// when it is not a call it goes to content as the model wrote it, header included.
#include <array>

#include "server/tool_calls.h"

namespace nvfp4::server {
namespace {

constexpr std::string_view kMessage = "<|message|>", kStart = "<|start|>", kAssistant = "assistant";
constexpr std::array<std::string_view, 4> kEnds = {"<|eom|>", "<|eot|>", "<|start|>", "<|end_of_text|>"};
constexpr size_t kMaxHeader = 512;  // a header longer than this is not one: the text is content

}  // namespace

void ChatOutputParser::end_message(ChatDelta& d) {
  if (sink_ == Sink::Call) {
    auto calls = parse_tool_calls(o_.tools, call_body_, types_);  // none unless the request offered tools
    if (calls.empty()) {
      emit_content(d, opener_ + call_body_);
    } else {
      for (auto& c : calls) {
        c.id = new_id();
        d.calls.push_back(std::move(c));
        ++n_calls_;
      }
    }
    call_body_.clear();
  }
  sink_ = Sink::Content;
  mode_ = Mode::Header;
}

bool ChatOutputParser::run_channels(ChatDelta& d, bool at_end) {
  if (mode_ == Mode::Header) {
    const size_t p = buf_.find(kMessage);
    if (p == std::string::npos) {
      if (!at_end && buf_.size() < kMaxHeader) return false;
      // No header: the text is content, as written (a later <|eom|> still ends it); a <|start|>
      // that opens it is content too, so that the body does not end before it begins.
      sink_ = Sink::Content;
      mode_ = Mode::Body;
      if (buf_.compare(0, kStart.size(), kStart) == 0) {
        emit_content(d, kStart);
        buf_.erase(0, kStart.size());
      }
      return !buf_.empty();
    }
    std::string_view h = trim_ws(std::string_view(buf_).substr(0, p));
    if (h.substr(0, kStart.size()) == kStart) h = trim_ws(h.substr(kStart.size()));
    if (h.substr(0, kAssistant.size()) == kAssistant) h = trim_ws(h.substr(kAssistant.size()));
    std::string_view to;
    bool header = h.empty();
    if (h.substr(0, 3) == "to=") {
      to = trim_ws(h.substr(3));
      header = to.find_first_of(" \n<>") == std::string_view::npos;
    }
    // (to views buf_: the sink is chosen before buf_ changes.)
    sink_ = !header || to.empty() || to == "user" ? Sink::Content : to == "self" ? Sink::Reasoning : Sink::Call;
    opener_ = buf_.substr(0, p + kMessage.size());
    buf_.erase(0, p + kMessage.size());
    mode_ = Mode::Body;
    if (!header) emit_content(d, opener_);
    return true;
  }
  // Body: up to the first end marker, or all but what could begin one.
  size_t best = std::string::npos, len = 0;
  for (const auto m : kEnds)
    if (const size_t q = buf_.find(m); q < best) {
      best = q;
      len = m == kStart ? 0 : m.size();  // <|start|> opens the next header: left for it
    }
  const size_t keep_from = [&] {
    if (best != std::string::npos) return best;
    if (at_end) return buf_.size();
    size_t keep = 0;
    for (const auto m : kEnds) keep = std::max(keep, partial_suffix(buf_, m));
    return buf_.size() - keep;
  }();
  const std::string_view piece = std::string_view(buf_).substr(0, keep_from);
  switch (sink_) {
    case Sink::Reasoning: d.reasoning += piece; break;
    case Sink::Content: emit_content(d, piece); break;
    case Sink::Call: call_body_ += piece; break;
  }
  buf_.erase(0, keep_from);
  if (best != std::string::npos) {
    buf_.erase(0, len);
    end_message(d);
    return true;
  }
  if (at_end) end_message(d);
  return false;
}

}  // namespace nvfp4::server

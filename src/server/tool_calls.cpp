// ChatOutputParser: reasoning and tool calls out of a model's chat text (see tool_calls.h).
#include "server/tool_calls.h"

#include <nlohmann/json.hpp>
#include <optional>

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kMistralOpen = "[TOOL_CALLS]", kPythonTag = "<|python_tag|>";
constexpr std::string_view kGemmaCallOpen = "<|tool_call>", kGemmaCallClose = "<tool_call|>";
constexpr std::string_view kGemmaThinkOpen = "<|channel>", kGemmaThinkClose = "<channel|>";

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// The end (one past '}' or ']') of the JSON object or array that starts s[0], strings and escapes
// respected; npos when it does not end in s. Nesting is bounded (a JSON parse follows).
size_t json_end(std::string_view s) {
  if (s.empty() || (s[0] != '{' && s[0] != '[')) return std::string_view::npos;
  int depth = 0;
  bool in_str = false, esc = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_str) {
      if (esc) esc = false;
      else if (c == '\\') esc = true;
      else if (c == '"') in_str = false;
      continue;
    }
    if (c == '"') in_str = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::optional<OJson> parse_json(std::string_view s) {
  int deepest = 0;
  OJson j = OJson::parse(
      s.begin(), s.end(),
      [&](int d, OJson::parse_event_t, OJson&) {
        deepest = std::max(deepest, d);
        return deepest <= 64;
      },
      /*allow_exceptions=*/false);
  if (j.is_discarded() || deepest > 64) return std::nullopt;
  return j;
}

std::string dump(const OJson& j) { return j.dump(-1, ' ', false, OJson::error_handler_t::replace); }

// {"name": "...", "arguments"|"parameters": {...} or "<json object text>"} -> a call.
std::optional<ParsedToolCall> call_of(const OJson& j) {
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  ParsedToolCall c;
  c.name = name->get<std::string>();
  if (args == j.end() || args->is_null()) {
    c.arguments = "{}";
  } else if (args->is_object()) {
    c.arguments = dump(*args);
  } else if (args->is_string()) {  // arguments given as JSON text
    const auto inner = parse_json(args->get_ref<const std::string&>());
    if (!inner || !inner->is_object()) return std::nullopt;
    c.arguments = dump(*inner);
  } else {
    return std::nullopt;
  }
  if (const auto id = j.find("id"); id != j.end() && id->is_string()) c.id = id->get<std::string>();
  return c;
}

// Top-level JSON objects separated by whitespace or ';' (Llama 3's parallel calls).
std::vector<ParsedToolCall> objects_calls(std::string_view s) {
  std::vector<ParsedToolCall> out;
  s = trim(s);
  while (!s.empty()) {
    const size_t e = json_end(s);
    if (e == std::string_view::npos || s[0] != '{') return {};
    const auto j = parse_json(s.substr(0, e));
    if (!j) return {};
    auto c = call_of(*j);
    if (!c) return {};
    out.push_back(std::move(*c));
    s = s.substr(e);
    while (!s.empty() && (is_ws(s.front()) || s.front() == ';')) s.remove_prefix(1);
  }
  return out;
}

// Mistral after [TOOL_CALLS]: a JSON array of calls, or name[ARGS]{...} / name[CALL_ID]id[ARGS]{...},
// each further call after another [TOOL_CALLS].
std::vector<ParsedToolCall> mistral_calls(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '[' && s.substr(0, 6) != "[ARGS]") {
    const auto j = parse_json(s);
    if (!j || !j->is_array() || j->empty()) return {};
    std::vector<ParsedToolCall> out;
    for (const auto& e : *j) {
      auto c = call_of(e);
      if (!c) return {};
      out.push_back(std::move(*c));
    }
    return out;
  }
  std::vector<ParsedToolCall> out;
  while (!s.empty()) {
    const size_t a = s.find("[ARGS]");
    if (a == std::string_view::npos) return {};
    std::string_view head = s.substr(0, a);
    ParsedToolCall c;
    if (const size_t ci = head.find("[CALL_ID]"); ci != std::string_view::npos) {
      c.id = std::string(trim(head.substr(ci + 9)));
      head = head.substr(0, ci);
    }
    c.name = std::string(trim(head));
    if (c.name.empty() || c.name.find_first_of("[]{}\" \n") != std::string::npos) return {};
    std::string_view rest = trim(s.substr(a + 6));
    const size_t e = json_end(rest);
    if (e == std::string_view::npos || rest[0] != '{') return {};
    const auto j = parse_json(rest.substr(0, e));
    if (!j || !j->is_object()) return {};
    c.arguments = dump(*j);
    out.push_back(std::move(c));
    s = trim(rest.substr(e));
    if (s.substr(0, kMistralOpen.size()) == kMistralOpen) s = trim(s.substr(kMistralOpen.size()));
    else if (!s.empty()) return {};
  }
  return out;
}

// The marker that ends a tool call block of `f` (Hermes's and QwenXml's </tool_call>).
std::string_view block_close(ToolFormat f) { return f == ToolFormat::Gemma4 ? kGemmaCallClose : kHermesClose; }

bool valid_id(const std::string& id) {
  if (id.size() != 9) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
  return true;
}

}  // namespace

std::string_view trim_ws(std::string_view s) { return trim(s); }

size_t partial_suffix(std::string_view s, std::string_view m) {
  for (size_t n = std::min(s.size(), m.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == m.substr(0, n)) return n;
  return 0;
}

ToolFormat tool_format_of(const std::string& t) {
  if (t.find("<atem:function_calls>") != std::string::npos && t.find("<|message|>") != std::string::npos) return ToolFormat::Atem;
  if (t.find(kGemmaCallOpen) != std::string::npos && t.find(kGemmaCallClose) != std::string::npos) return ToolFormat::Gemma4;
  // Qwen3.5/3.6 write <tool_call> too, with XML-like <function=...><parameter=...> inside.
  if (t.find(kHermesOpen) != std::string::npos && t.find("<function=") != std::string::npos &&
      t.find("<parameter=") != std::string::npos)
    return ToolFormat::QwenXml;
  if (t.find(kHermesOpen) != std::string::npos) return ToolFormat::Hermes;
  if (t.find(kMistralOpen) != std::string::npos) return ToolFormat::Mistral;
  if (t.find("<|start_header_id|>") != std::string::npos && t.find("tools") != std::string::npos &&
      t.find("\"parameters\"") != std::string::npos)
    return ToolFormat::Llama3;
  return ToolFormat::None;
}

const char* tool_format_name(ToolFormat f) {
  switch (f) {
    case ToolFormat::Hermes: return "hermes (<tool_call>)";
    case ToolFormat::QwenXml: return "qwen xml (<tool_call><function=...>)";
    case ToolFormat::Llama3: return "llama3 (JSON)";
    case ToolFormat::Mistral: return "mistral ([TOOL_CALLS])";
    case ToolFormat::Gemma4: return "gemma4 (<|tool_call>call:NAME{...})";
    case ToolFormat::Atem: return "atem (Muse Glimmer: to=NAME<|message|><atem:function_calls>)";
    default: return "none";
  }
}

std::vector<ParsedToolCall> parse_tool_calls(ToolFormat f, std::string_view body, const ParamTypes& types) {
  switch (f) {
    case ToolFormat::QwenXml: return qwen_xml_calls(body, types);
    case ToolFormat::Hermes: {
      const auto b = trim(body);
      const auto j = parse_json(b);
      if (!j) return {};
      auto c = call_of(*j);
      if (!c) return {};
      return {std::move(*c)};
    }
    case ToolFormat::Llama3: return objects_calls(body);
    case ToolFormat::Mistral: return mistral_calls(body);
    case ToolFormat::Gemma4: return gemma4_calls(body);
    case ToolFormat::Atem: return atem_calls(body, types);
    default: return {};
  }
}

ChatParseOptions chat_parse_options(const std::string& t, const std::string& tools_json, const std::string& prompt) {
  ChatParseOptions o;
  if (!tools_json.empty()) {
    o.tools = tool_format_of(t);
    o.tools_json = tools_json;
  }
  if (t.find(kGemmaThinkOpen) != std::string::npos && t.find(kGemmaThinkClose) != std::string::npos) {
    o.think_open = kGemmaThinkOpen;
    o.think_close = kGemmaThinkClose;
    o.think_label = "thought\n";
  }
  o.reasoning = t.find(o.think_close) != std::string::npos;
  size_t e = prompt.size();
  while (e > 0 && (prompt[e - 1] == '\n' || prompt[e - 1] == ' ')) --e;
  // Muse Glimmer's messages: its template writes the reasoning channel (to=self) and the
  // generation prompt opens a message header.
  constexpr std::string_view kOpen = "<|start|>assistant";
  if (t.find("to=self<|message|>") != std::string::npos && e >= kOpen.size() &&
      prompt.compare(e - kOpen.size(), kOpen.size(), kOpen) == 0) {
    o.channels = true;
    o.reasoning = true;
    o.in_reasoning = false;
    return o;
  }
  const size_t n = o.think_open.size();
  o.in_reasoning = o.reasoning && e >= n && prompt.compare(e - n, n, o.think_open) == 0;
  return o;
}

ChatOutputParser::ChatOutputParser(ChatParseOptions o, uint64_t id_seed) : o_(std::move(o)), rng_(id_seed) {
  if (o_.channels) {
    mode_ = Mode::Header;
  } else if (o_.reasoning && o_.in_reasoning) {
    mode_ = Mode::Reasoning;
    label_pending_ = !o_.think_label.empty();
  }
  if (o_.tools == ToolFormat::QwenXml || o_.tools == ToolFormat::Atem) types_ = param_types_of(o_.tools_json);
}

std::string ChatOutputParser::new_id() {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id(9, ' ');
  for (char& c : id) c = kAlnum[rng_() % 62];
  return id;
}

void ChatOutputParser::emit_content(ChatDelta& d, std::string_view s) {
  if (strip_ws_) {
    while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
    if (s.empty()) return;
    strip_ws_ = false;
  }
  if (s.empty()) return;
  d.content += s;
  said_content_ = true;
}

void ChatOutputParser::close_block(ChatDelta& d, const std::string& body, bool closed) {
  auto calls = parse_tool_calls(o_.tools, body, types_);
  if (calls.empty()) {
    emit_content(d, opener_ + body + (closed ? std::string(block_close(o_.tools)) : std::string()));
    return;
  }
  for (auto& c : calls) {
    if (!valid_id(c.id)) c.id = new_id();
    d.calls.push_back(std::move(c));
    ++n_calls_;
  }
  strip_ws_ = true;
}

void ChatOutputParser::close_tail(ChatDelta& d) {
  auto calls = parse_tool_calls(o_.tools, buf_, types_);
  if (calls.empty()) {
    emit_content(d, opener_ + buf_);
  } else {
    for (auto& c : calls) {
      if (!valid_id(c.id)) c.id = new_id();
      d.calls.push_back(std::move(c));
      ++n_calls_;
    }
  }
  buf_.clear();
}

void ChatOutputParser::run(ChatDelta& d, bool at_end) {
  if (o_.channels) {
    while (run_channels(d, at_end)) {
    }
    return;
  }
  for (;;) {
    switch (mode_) {
      case Mode::Reasoning: {
        if (label_pending_) {
          // The channel's label opens the reasoning: dropped once it is whole; held while the
          // text may still become it.
          const std::string& label = o_.think_label;
          if (buf_.compare(0, label.size(), label) == 0) {
            buf_.erase(0, label.size());
            label_pending_ = false;
          } else if (!at_end && buf_.size() < label.size() && label.compare(0, buf_.size(), buf_) == 0) {
            return;
          } else {
            label_pending_ = false;
          }
        }
        const size_t p = buf_.find(o_.think_close);
        if (p != std::string::npos) {
          d.reasoning += buf_.substr(0, p);
          buf_.erase(0, p + o_.think_close.size());
          mode_ = Mode::Content;
          strip_ws_ = true;
          continue;
        }
        const size_t keep = at_end ? 0 : partial_suffix(buf_, o_.think_close);
        d.reasoning += buf_.substr(0, buf_.size() - keep);
        buf_.erase(0, buf_.size() - keep);
        return;
      }
      case Mode::Block: {
        const std::string_view close = block_close(o_.tools);
        const size_t p = buf_.find(close);
        if (p != std::string::npos) {
          const std::string body = buf_.substr(0, p);
          buf_.erase(0, p + close.size());
          mode_ = Mode::Content;
          close_block(d, body, true);
          continue;
        }
        if (at_end) {
          const std::string body = std::move(buf_);
          buf_.clear();
          mode_ = Mode::Content;
          close_block(d, body, false);
        }
        return;
      }
      case Mode::Tail:
        if (at_end) {
          close_tail(d);
          mode_ = Mode::Content;
        }
        return;
      case Mode::Content:
      case Mode::Header:
      case Mode::Body: break;
    }
    // Content: the earliest marker that switches mode, or all but what could begin one.
    std::vector<std::string_view> markers;
    if (o_.reasoning) markers.push_back(o_.think_open);
    if (o_.tools == ToolFormat::Hermes || o_.tools == ToolFormat::QwenXml) markers.push_back(kHermesOpen);
    if (o_.tools == ToolFormat::Gemma4) markers.push_back(kGemmaCallOpen);
    if (o_.tools == ToolFormat::Mistral) markers.push_back(kMistralOpen);
    if (o_.tools == ToolFormat::Llama3) {
      markers.push_back(kPythonTag);
      if (!said_content_ && n_calls_ == 0) {
        // Llama 3 answers a call with JSON alone: a reply that begins with '{' is held to its end.
        size_t i = 0;
        while (i < buf_.size() && is_ws(buf_[i])) ++i;
        if (i == buf_.size() && !at_end) return;
        if (i < buf_.size() && buf_[i] == '{') {
          opener_ = buf_.substr(0, i);
          buf_.erase(0, i);
          mode_ = Mode::Tail;
          continue;
        }
      }
    }
    size_t best = std::string::npos;
    std::string_view which;
    for (const auto m : markers) {
      const size_t p = buf_.find(m);
      if (p < best) {
        best = p;
        which = m;
      }
    }
    if (best != std::string::npos) {
      emit_content(d, std::string_view(buf_).substr(0, best));
      buf_.erase(0, best + which.size());
      opener_ = std::string(which);
      if (o_.reasoning && which == o_.think_open) {
        mode_ = Mode::Reasoning;
        label_pending_ = !o_.think_label.empty();
      } else if (which == kHermesOpen || which == kGemmaCallOpen) {
        mode_ = Mode::Block;
      } else {
        mode_ = Mode::Tail;
      }
      continue;
    }
    size_t keep = 0;
    if (!at_end)
      for (const auto m : markers) keep = std::max(keep, partial_suffix(buf_, m));
    emit_content(d, std::string_view(buf_).substr(0, buf_.size() - keep));
    buf_.erase(0, buf_.size() - keep);
    return;
  }
}

ChatDelta ChatOutputParser::push(std::string_view text) {
  ChatDelta d;
  buf_ += text;
  run(d, false);
  return d;
}

ChatDelta ChatOutputParser::finish() {
  ChatDelta d;
  run(d, true);
  return d;
}

}  // namespace nvfp4::server

// Anthropic's Messages request body as a chat request (see messages_request.h).
#include "server/messages_request.h"

#include <set>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/request_tools.h"

namespace nvfp4::server {
namespace {

std::string idx(const std::string& name, size_t i) { return name + "[" + std::to_string(i) + "]"; }

// Text blocks (or a string), concatenated as the chat route concatenates text parts.
std::string text_blocks(const OJson& c, const std::string& name) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) wrong_type(name, "a string or an array of text blocks", c);
  std::string out;
  for (size_t k = 0; k < c.size(); ++k) {
    const std::string bn = idx(name, k);
    if (!c[k].is_object()) wrong_type(bn, "an object", c[k]);
    const std::string type = str_field(c[k], "type", bn + ".type", true);
    if (type != "text") bad_value(bn + ".type", "must be \"text\" (only text is served), found \"" + shown(type) + "\"");
    out += str_field(c[k], "text", bn + ".text", true);
  }
  return out;
}

void user_turn(const OJson& content, const std::string& name, std::vector<ChatMessage>& out) {
  if (content.is_string()) {
    out.emplace_back("user", content.get<std::string>());
    return;
  }
  if (!content.is_array()) wrong_type(name, "a string or an array of content blocks", content);
  std::string text;
  bool has_text = content.empty();
  for (size_t k = 0; k < content.size(); ++k) {
    const std::string bn = idx(name, k);
    const OJson& b = content[k];
    if (!b.is_object()) wrong_type(bn, "an object", b);
    const std::string type = str_field(b, "type", bn + ".type", true);
    if (type == "text") {
      text += str_field(b, "text", bn + ".text", true);
      has_text = true;
    } else if (type == "tool_result") {
      ChatMessage m("tool", "");
      m.tool_call_id = str_field(b, "tool_use_id", bn + ".tool_use_id", true);
      if (const OJson* c = field(b, "content")) m.content = text_blocks(*c, bn + ".content");
      (void)bool_field(b, "is_error", bn + ".is_error");
      for (auto it = out.rbegin(); it != out.rend() && !m.name; ++it)
        for (const auto& c : it->tool_calls)
          if (c.id == *m.tool_call_id) m.name = c.name;
      out.push_back(std::move(m));
    } else {
      bad_value(bn + ".type", "must be text or tool_result in a user message, found \"" + shown(type) + "\"");
    }
  }
  if (has_text) out.emplace_back("user", text);
}

void assistant_turn(const OJson& content, const std::string& name, std::vector<ChatMessage>& out) {
  ChatMessage m("assistant", "");
  if (content.is_string()) {
    m.content = content.get<std::string>();
  } else {
    if (!content.is_array()) wrong_type(name, "a string or an array of content blocks", content);
    for (size_t k = 0; k < content.size(); ++k) {
      const std::string bn = idx(name, k);
      const OJson& b = content[k];
      if (!b.is_object()) wrong_type(bn, "an object", b);
      const std::string type = str_field(b, "type", bn + ".type", true);
      if (type == "text") {
        m.content += str_field(b, "text", bn + ".text", true);
      } else if (type == "thinking") {
        m.reasoning_content = m.reasoning_content.value_or("") + str_field(b, "thinking", bn + ".thinking", true);
      } else if (type == "redacted_thinking") {
        // opaque to us: nothing to render
      } else if (type == "tool_use") {
        ChatToolCall c;
        c.id = str_field(b, "id", bn + ".id", true);
        c.name = str_field(b, "name", bn + ".name", true);
        if (c.name.empty()) bad_value(bn + ".name", "must not be empty");
        const OJson& in = required(b, "input", bn + ".input");
        if (!in.is_object()) wrong_type(bn + ".input", "an object", in);
        c.arguments = dump_ordered(in);
        m.tool_calls.push_back(std::move(c));
      } else {
        bad_value(bn + ".type", "must be text, thinking, redacted_thinking or tool_use in an assistant message, found \"" +
                                    shown(type) + "\"");
      }
    }
  }
  out.push_back(std::move(m));
}

std::set<std::string> parse_tools(const OJson& tools, GenRequest& r) {
  if (!tools.is_array()) wrong_type("tools", "an array of tools", tools);
  if (tools.size() > 512) bad_value("tools", "may hold at most 512 tools, found " + std::to_string(tools.size()));
  std::set<std::string> names;
  OJson chat = OJson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string tn = idx("tools", i);
    const OJson& t = tools[i];
    if (!t.is_object()) wrong_type(tn, "an object", t);
    const std::string type = str_field(t, "type", tn + ".type");
    if (!type.empty() && type != "custom")
      bad_value(tn + ".type", "must be \"custom\" or absent (server tools are not served), found \"" + shown(type) + "\"");
    const std::string n = str_field(t, "name", tn + ".name", true);
    check_function_name(n, tn + ".name");
    if (!names.insert(n).second) bad_value(tn + ".name", "repeats the name \"" + shown(n) + "\"");
    OJson f = OJson::object();
    f["name"] = n;
    if (const OJson* d = field(t, "description")) {
      if (!d->is_string()) wrong_type(tn + ".description", "a string", *d);
      f["description"] = *d;
    }
    const OJson& schema = required(t, "input_schema", tn + ".input_schema");
    if (!schema.is_object()) wrong_type(tn + ".input_schema", "an object (a JSON schema)", schema);
    f["parameters"] = schema;
    chat.push_back(OJson{{"type", "function"}, {"function", std::move(f)}});
  }
  if (!chat.empty()) r.tools_json = dump_ordered(chat);
  return names;
}

void parse_tool_choice(const OJson& tc, const std::set<std::string>& names, GenRequest& r) {
  if (!tc.is_object()) wrong_type("tool_choice", "an object ({\"type\": \"auto\"})", tc);
  const std::string type = str_field(tc, "type", "tool_choice.type", true);
  (void)bool_field(tc, "disable_parallel_tool_use", "tool_choice.disable_parallel_tool_use");
  OJson chat;
  if (type == "auto" || type == "none") {
    r.tool_choice = type;
    chat = type;
  } else if (type == "any") {
    r.tool_choice = "required";
    chat = "required";
  } else if (type == "tool") {
    r.tool_choice = "function";
    r.tool_choice_name = str_field(tc, "name", "tool_choice.name", true);
    if (!names.count(r.tool_choice_name))
      bad_value("tool_choice.name", "names no tool in 'tools', found \"" + shown(r.tool_choice_name) + "\"");
    chat = OJson{{"type", "function"}, {"function", {{"name", r.tool_choice_name}}}};
  } else {
    bad_value("tool_choice.type", "must be auto, any, tool or none, found \"" + shown(type) + "\"");
  }
  if (r.tool_choice != "none" && r.tool_choice != "auto" && names.empty())
    bad_value("tool_choice", "asks for a tool call but 'tools' is empty or absent");
  r.template_vars["tool_choice"] = dump_ordered(chat);
}

}  // namespace

GenRequest parse_messages_request(const std::string& body) {
  const OJson j = parse_body_object(body);
  GenRequest r;
  r.chat = true;
  r.prompt_field = "messages";
  r.model = str_field(j, "model", "model");
  const auto mt = int_field(j, "max_tokens", "max_tokens");
  if (!mt) throw ApiError(400, "'max_tokens' is required", "max_tokens", "missing_field");
  if (*mt < 1) bad_value("max_tokens", "must be at least 1, found " + std::to_string(*mt));
  r.max_tokens = *mt;
  r.max_tokens_field = "max_tokens";
  if (const OJson* s = field(j, "system")) r.messages.emplace_back("system", text_blocks(*s, "system"));
  const OJson& msgs = required(j, "messages", "messages");
  if (!msgs.is_array()) wrong_type("messages", "an array", msgs);
  if (msgs.empty()) bad_value("messages", "must hold at least one message");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const std::string mn = idx("messages", i);
    const OJson& m = msgs[i];
    if (!m.is_object()) wrong_type(mn, "an object", m);
    const std::string role = str_field(m, "role", mn + ".role", true);
    const OJson& content = required(m, "content", mn + ".content");
    if (role == "user") user_turn(content, mn + ".content", r.messages);
    else if (role == "assistant") assistant_turn(content, mn + ".content", r.messages);
    else bad_value(mn + ".role", "must be user or assistant, found \"" + shown(role) + "\"");
  }
  std::set<std::string> names;
  if (const OJson* t = field(j, "tools")) names = parse_tools(*t, r);
  if (const OJson* tc = field(j, "tool_choice")) parse_tool_choice(*tc, names, r);
  if (const OJson* s = field(j, "stop_sequences")) {
    if (!s->is_array()) wrong_type("stop_sequences", "an array of strings", *s);
    if (s->size() > 16) bad_value("stop_sequences", "may hold at most 16 strings, found " + std::to_string(s->size()));
    for (size_t k = 0; k < s->size(); ++k) {
      if (!(*s)[k].is_string()) wrong_type(idx("stop_sequences", k), "a string", (*s)[k]);
      if (!(*s)[k].get<std::string>().empty()) r.stop.push_back((*s)[k].get<std::string>());
    }
  }
  if (const auto t = num_field(j, "temperature", "temperature")) {
    if (!(*t >= 0 && *t <= 1)) bad_value("temperature", "must be between 0 and 1");
    r.sampling.temperature = static_cast<float>(*t);
  }
  if (const auto p = num_field(j, "top_p", "top_p")) {
    if (!(*p > 0 && *p <= 1)) bad_value("top_p", "must be in (0, 1]");
    r.sampling.top_p = static_cast<float>(*p);
  }
  if (const auto k = int_field(j, "top_k", "top_k")) {
    if (*k < 0 || *k > (1 << 30)) bad_value("top_k", "must be between 0 and 2^30");
    r.sampling.top_k = static_cast<int>(*k);
  }
  if (const OJson* th = field(j, "thinking")) {
    if (!th->is_object()) wrong_type("thinking", "an object ({\"type\": \"enabled\", \"budget_tokens\": N})", *th);
    const std::string type = str_field(*th, "type", "thinking.type", true);
    if (type != "enabled" && type != "disabled" && type != "adaptive")
      bad_value("thinking.type", "must be enabled, disabled or adaptive, found \"" + shown(type) + "\"");
    if (const auto bt = int_field(*th, "budget_tokens", "thinking.budget_tokens"); bt && *bt < 1)
      bad_value("thinking.budget_tokens", "must be at least 1");
    r.template_vars["enable_thinking"] = type == "disabled" ? "false" : "true";
  }
  r.stream = bool_field(j, "stream", "stream").value_or(false);
  if (const OJson* md = field(j, "metadata"); md && !md->is_object()) wrong_type("metadata", "an object", *md);
  return r;
}

}  // namespace nvfp4::server

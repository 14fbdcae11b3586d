// The Responses API's request body as a chat request (see responses_request.h).
#include "server/responses_request.h"

#include <set>

#include "server/api_error.h"
#include "server/output_grammar.h"
#include "server/request_tools.h"

namespace nvfp4::server {
namespace {

std::string idx(const std::string& name, size_t i) { return name + "[" + std::to_string(i) + "]"; }

// A message's content: a string or input_text / output_text parts (concatenated, as the chat
// route concatenates text parts).
std::string item_text(const OJson& c, const std::string& name) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) wrong_type(name, "a string or an array of content parts", c);
  std::string out;
  for (size_t k = 0; k < c.size(); ++k) {
    const std::string pn = idx(name, k);
    const OJson& p = c[k];
    if (!p.is_object()) wrong_type(pn, "an object", p);
    const std::string type = str_field(p, "type", pn + ".type", true);
    if (type == "refusal") {
      out += str_field(p, "refusal", pn + ".refusal", true);
    } else if (type == "input_text" || type == "output_text" || type == "text") {
      out += str_field(p, "text", pn + ".text", true);
    } else {
      bad_value(pn + ".type", "must be input_text or output_text (only text is served), found \"" + shown(type) + "\"");
    }
  }
  return out;
}

// A reasoning item's text: its content (reasoning_text parts), else its summary (summary_text).
std::string reasoning_text(const OJson& item, const std::string& name) {
  std::string out;
  for (const char* key : {"content", "summary"}) {
    const OJson* parts = field(item, key);
    if (!parts) continue;
    const std::string pn = name + "." + key;
    if (!parts->is_array()) wrong_type(pn, "an array", *parts);
    for (size_t k = 0; k < parts->size(); ++k) {
      const OJson& p = (*parts)[k];
      if (!p.is_object()) wrong_type(idx(pn, k), "an object", p);
      out += str_field(p, "text", idx(pn, k) + ".text", true);
    }
    if (!out.empty()) break;
  }
  return out;
}

void parse_tools(const OJson& tools, ResponsesRequest& r, std::set<std::string>& names) {
  if (!tools.is_array()) wrong_type("tools", "an array of tools", tools);
  if (tools.size() > 512) bad_value("tools", "may hold at most 512 tools, found " + std::to_string(tools.size()));
  OJson chat = OJson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string tn = idx("tools", i);
    const OJson& t = tools[i];
    if (!t.is_object()) wrong_type(tn, "an object", t);
    const std::string type = str_field(t, "type", tn + ".type", true);
    if (type != "function")
      bad_value(tn + ".type", "must be \"function\" (the only tool type served), found \"" + shown(type) + "\"");
    const std::string n = str_field(t, "name", tn + ".name", true);
    check_function_name(n, tn + ".name");
    if (!names.insert(n).second) bad_value(tn + ".name", "repeats the name \"" + shown(n) + "\"");
    OJson f = OJson::object();
    f["name"] = n;
    if (const OJson* d = field(t, "description")) {
      if (!d->is_string()) wrong_type(tn + ".description", "a string", *d);
      f["description"] = *d;
    }
    if (const OJson* p = field(t, "parameters")) {
      if (!p->is_object()) wrong_type(tn + ".parameters", "an object (a JSON schema)", *p);
      f["parameters"] = *p;
    }
    (void)bool_field(t, "strict", tn + ".strict");
    chat.push_back(OJson{{"type", "function"}, {"function", std::move(f)}});
  }
  r.tools = tools;
  if (!chat.empty()) r.gen.tools_json = dump_ordered(chat);
}

void parse_tool_choice(const OJson& tc, const std::set<std::string>& names, ResponsesRequest& r) {
  OJson chat;
  if (tc.is_string()) {
    const std::string& s = tc.get_ref<const std::string&>();
    if (s != "none" && s != "auto" && s != "required")
      bad_value("tool_choice", "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}, found \"" +
                                   shown(s) + "\"");
    r.gen.tool_choice = s;
    chat = tc;
  } else if (tc.is_object()) {
    const std::string type = str_field(tc, "type", "tool_choice.type", true);
    if (type != "function") bad_value("tool_choice.type", "must be \"function\", found \"" + shown(type) + "\"");
    r.gen.tool_choice = "function";
    r.gen.tool_choice_name = str_field(tc, "name", "tool_choice.name", true);
    if (!names.count(r.gen.tool_choice_name))
      bad_value("tool_choice.name", "names no tool in 'tools', found \"" + shown(r.gen.tool_choice_name) + "\"");
    chat = OJson{{"type", "function"}, {"function", {{"name", r.gen.tool_choice_name}}}};
  } else {
    wrong_type("tool_choice", "a string or an object", tc);
  }
  if (r.gen.tool_choice != "none" && r.gen.tool_choice != "auto" && names.empty())
    bad_value("tool_choice", "asks for a tool call but 'tools' is empty or absent");
  r.tool_choice = tc;
  r.gen.template_vars["tool_choice"] = dump_ordered(chat);
}

}  // namespace

std::vector<ChatMessage> input_items(const OJson& items, const std::string& name, const std::vector<ChatMessage>& earlier) {
  std::vector<ChatMessage> out;
  bool open = false;  // the last message is an assistant turn that later assistant items join
  auto call_name = [&](const std::string& call_id) -> std::optional<std::string> {
    for (const std::vector<ChatMessage>* list : {static_cast<const std::vector<ChatMessage>*>(&out), &earlier})
      for (auto it = list->rbegin(); it != list->rend(); ++it)
        for (const auto& c : it->tool_calls)
          if (c.id == call_id) return c.name;
    return std::nullopt;
  };
  auto assistant = [&]() -> ChatMessage& {
    if (!open) out.emplace_back("assistant", "");
    open = true;
    return out.back();
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string in = idx(name, i);
    const OJson& it = items[i];
    if (!it.is_object()) wrong_type(in, "an object (an input item)", it);
    std::string type = str_field(it, "type", in + ".type");
    if (type.empty()) {
      if (!field(it, "role")) throw ApiError(400, "'" + in + ".type' is required", in + ".type", "missing_field");
      type = "message";
    }
    if (type == "message") {
      std::string role = str_field(it, "role", in + ".role", true);
      if (role == "developer") role = "system";
      if (role != "system" && role != "user" && role != "assistant")
        bad_value(in + ".role", "must be user, assistant, system or developer, found \"" + shown(role) + "\"");
      const std::string text = item_text(required(it, "content", in + ".content"), in + ".content");
      if (role == "assistant") {
        ChatMessage& m = (open && out.back().content.empty() && out.back().tool_calls.empty()) ? out.back()
                                                                                               : (open = false, assistant());
        m.content += text;
      } else {
        out.emplace_back(role, text);
        open = false;
      }
    } else if (type == "reasoning") {
      const std::string text = reasoning_text(it, in);
      if (open && (!out.back().content.empty() || !out.back().tool_calls.empty())) open = false;
      ChatMessage& m = assistant();
      m.reasoning_content = m.reasoning_content.value_or("") + text;
    } else if (type == "function_call") {
      ChatToolCall c;
      c.id = str_field(it, "call_id", in + ".call_id", true);
      c.name = str_field(it, "name", in + ".name", true);
      if (c.name.empty()) bad_value(in + ".name", "must not be empty");
      c.arguments = str_field(it, "arguments", in + ".arguments", true);
      assistant().tool_calls.push_back(std::move(c));
    } else if (type == "function_call_output") {
      ChatMessage m("tool", "");
      m.tool_call_id = str_field(it, "call_id", in + ".call_id", true);
      m.content = item_text(required(it, "output", in + ".output"), in + ".output");
      m.name = call_name(*m.tool_call_id);
      out.push_back(std::move(m));
      open = false;
    } else {
      bad_value(in + ".type", "must be message, reasoning, function_call or function_call_output, found \"" +
                                  shown(type) + "\"");
    }
  }
  return out;
}

ResponsesRequest parse_responses_request(const std::string& body) {
  const OJson j = parse_body_object(body);
  ResponsesRequest r;
  GenRequest& g = r.gen;
  g.chat = true;
  g.prompt_field = "input";
  g.model = str_field(j, "model", "model");
  r.previous_response_id = str_field(j, "previous_response_id", "previous_response_id");
  if (const OJson* ins = field(j, "instructions")) {
    if (!ins->is_string()) wrong_type("instructions", "a string", *ins);
    r.instructions = ins->get<std::string>();
    r.has_instructions = true;
  }
  const OJson* input = field(j, "input");
  if (!input && r.previous_response_id.empty()) throw ApiError(400, "'input' is required", "input", "missing_field");
  if (input) {
    if (input->is_string()) r.input.emplace_back("user", input->get<std::string>());
    else if (input->is_array()) r.input = input_items(*input, "input");
    else wrong_type("input", "a string or an array of input items", *input);
  }
  std::set<std::string> names;
  if (const OJson* t = field(j, "tools")) parse_tools(*t, r, names);
  if (const OJson* tc = field(j, "tool_choice")) parse_tool_choice(*tc, names, r);
  if (const OJson* re = field(j, "reasoning")) {
    if (!re->is_object()) wrong_type("reasoning", "an object", *re);
    const std::string effort = str_field(*re, "effort", "reasoning.effort");
    if (!effort.empty()) {
      if (effort != "none" && effort != "minimal" && effort != "low" && effort != "medium" && effort != "high")
        bad_value("reasoning.effort", "must be none, minimal, low, medium or high, found \"" + shown(effort) + "\"");
      g.template_vars["reasoning_effort"] = dump_ordered(OJson(effort));
      g.template_vars["enable_thinking"] = effort == "none" ? "false" : "true";
    }
    (void)str_field(*re, "summary", "reasoning.summary");
    r.reasoning = *re;
  }
  if (const auto mt = int_field(j, "max_output_tokens", "max_output_tokens")) {
    if (*mt < 1) bad_value("max_output_tokens", "must be at least 1, found " + std::to_string(*mt));
    g.max_tokens = *mt;
    r.max_output_tokens = *mt;
  }
  g.max_tokens_field = "max_output_tokens";
  if (const auto t = num_field(j, "temperature", "temperature")) {
    if (!(*t >= 0 && *t <= 2)) bad_value("temperature", "must be between 0 and 2");
    g.sampling.temperature = static_cast<float>(*t);
  }
  if (const auto p = num_field(j, "top_p", "top_p")) {
    if (!(*p > 0 && *p <= 1)) bad_value("top_p", "must be in (0, 1]");
    g.sampling.top_p = static_cast<float>(*p);
  }
  if (const auto s = int_field(j, "seed", "seed")) {
    g.sampling.seed = static_cast<uint64_t>(*s);
    g.seed_set = true;
  }
  g.stream = bool_field(j, "stream", "stream").value_or(false);
  r.store = bool_field(j, "store", "store").value_or(true);
  (void)bool_field(j, "parallel_tool_calls", "parallel_tool_calls");
  if (bool_field(j, "background", "background").value_or(false))
    bad_value("background", "must be false (background responses are not served)");
  if (const OJson* text = field(j, "text")) {
    if (!text->is_object()) wrong_type("text", "an object", *text);
    if (const OJson* f = field(*text, "format")) g.grammar = response_format_grammar(*f, "text.format", true);
  }
  return r;
}

std::vector<ChatMessage> responses_messages(const ResponsesRequest& r, const std::vector<ChatMessage>& history) {
  std::vector<ChatMessage> m;
  if (r.has_instructions) m.emplace_back("system", r.instructions);
  m.insert(m.end(), history.begin(), history.end());
  m.insert(m.end(), r.input.begin(), r.input.end());
  // A function_call_output answers a call of an earlier turn: named after it.
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].role != "tool" || m[i].name || !m[i].tool_call_id) continue;
    for (size_t k = i; k-- > 0 && !m[i].name;)
      for (const auto& c : m[k].tool_calls)
        if (c.id == *m[i].tool_call_id) m[i].name = c.name;
  }
  return m;
}

}  // namespace nvfp4::server

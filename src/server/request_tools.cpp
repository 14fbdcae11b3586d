// Tools, tool calls and template kwargs of a chat request (see request_tools.h).
#include "server/request_tools.h"

#include <nlohmann/json.hpp>
#include <set>

#include "server/api_error.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

const OJson* field(const OJson& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong(const std::string& name, const char* want, const OJson& v) {
  throw ApiError(400, "'" + name + "' must be " + want + ", found " + v.type_name(), name, "invalid_type");
}

[[noreturn]] void invalid(const std::string& name, const std::string& msg) {
  throw ApiError(400, "'" + name + "' " + msg, name, "invalid_value");
}

std::string dump(const OJson& j) { return j.dump(-1, ' ', false, OJson::error_handler_t::replace); }

// At most 64 printable ASCII characters of s, for messages.
std::string shown(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f && c != '"') ? static_cast<char>(c) : '?';
  return out;
}

const std::string& str_field(const OJson& j, const char* key, const std::string& name, bool required) {
  static const std::string kEmpty;
  const OJson* v = field(j, key);
  if (!v) {
    if (required) throw ApiError(400, "'" + name + "' is required", name, "missing_field");
    return kEmpty;
  }
  if (!v->is_string()) wrong(name, "a string", *v);
  return v->get_ref<const std::string&>();
}

void parse_tool_calls(const OJson& calls, const std::string& name, ChatMessage& cm) {
  if (!calls.is_array()) wrong(name, "an array", calls);
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string cn = name + "[" + std::to_string(i) + "]";
    const OJson& c = calls[i];
    if (!c.is_object()) wrong(cn, "an object", c);
    if (const OJson* t = field(c, "type"); t && (!t->is_string() || t->get<std::string>() != "function"))
      invalid(cn + ".type", "must be \"function\"");
    const OJson* f = field(c, "function");
    if (!f) throw ApiError(400, "'" + cn + ".function' is required", cn + ".function", "missing_field");
    if (!f->is_object()) wrong(cn + ".function", "an object", *f);
    ChatToolCall tc;
    tc.id = str_field(c, "id", cn + ".id", false);
    tc.name = str_field(*f, "name", cn + ".function.name", true);
    if (tc.name.empty()) invalid(cn + ".function.name", "must not be empty");
    const OJson* a = field(*f, "arguments");
    if (!a) tc.arguments = "{}";
    else if (a->is_string()) tc.arguments = a->get<std::string>();
    else if (a->is_object()) tc.arguments = dump(*a);  // some clients send the object itself
    else wrong(cn + ".function.arguments", "a string of JSON", *a);
    cm.tool_calls.push_back(std::move(tc));
  }
}

void parse_message(const OJson& msg, const std::string& name, ChatMessage& cm) {
  if (cm.role == "assistant") {
    if (const OJson* c = field(msg, "tool_calls")) parse_tool_calls(*c, name + ".tool_calls", cm);
    for (const char* key : {"reasoning_content", "reasoning"})
      if (const OJson* r = field(msg, key)) {
        if (!r->is_string()) wrong(name + "." + key, "a string", *r);
        cm.reasoning_content = r->get<std::string>();
        break;
      }
  } else if (cm.role == "tool") {
    if (const OJson* id = field(msg, "tool_call_id")) {
      if (!id->is_string()) wrong(name + ".tool_call_id", "a string", *id);
      cm.tool_call_id = id->get<std::string>();
    }
    if (const OJson* n = field(msg, "name")) {
      if (!n->is_string()) wrong(name + ".name", "a string", *n);
      cm.name = n->get<std::string>();
    }
  } else if (field(msg, "tool_calls")) {
    invalid(name + ".tool_calls", "is for assistant messages, found on a " + cm.role + " message");
  }
}

std::set<std::string> parse_tools(const OJson& tools, GenRequest& r) {
  if (!tools.is_array()) wrong("tools", "an array of tools", tools);
  if (tools.size() > 512) invalid("tools", "may hold at most 512 tools, found " + std::to_string(tools.size()));
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string tn = "tools[" + std::to_string(i) + "]";
    const OJson& t = tools[i];
    if (!t.is_object()) wrong(tn, "an object", t);
    const OJson* type = field(t, "type");
    if (!type) throw ApiError(400, "'" + tn + ".type' is required", tn + ".type", "missing_field");
    if (!type->is_string() || type->get<std::string>() != "function")
      invalid(tn + ".type", "must be \"function\" (the only tool type served)");
    const OJson* f = field(t, "function");
    if (!f) throw ApiError(400, "'" + tn + ".function' is required", tn + ".function", "missing_field");
    if (!f->is_object()) wrong(tn + ".function", "an object", *f);
    const std::string& n = str_field(*f, "name", tn + ".function.name", true);
    check_function_name(n, tn + ".function.name");
    if (!names.insert(n).second) invalid(tn + ".function.name", "repeats the name \"" + shown(n) + "\"");
    (void)str_field(*f, "description", tn + ".function.description", false);
    if (const OJson* p = field(*f, "parameters"); p && !p->is_object())
      wrong(tn + ".function.parameters", "an object (a JSON schema)", *p);
    if (const OJson* s = field(*f, "strict"); s && !s->is_boolean()) wrong(tn + ".function.strict", "a boolean", *s);
  }
  if (!tools.empty()) r.tools_json = dump(tools);
  return names;
}

void parse_tool_choice(const OJson& tc, const std::set<std::string>& names, GenRequest& r) {
  if (tc.is_string()) {
    const std::string& s = tc.get_ref<const std::string&>();
    if (s != "none" && s != "auto" && s != "required")
      invalid("tool_choice", "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
                             "{\"name\": ...}}, found \"" + shown(s) + "\"");
    r.tool_choice = s;
  } else if (tc.is_object()) {
    const OJson* type = field(tc, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "function")
      invalid("tool_choice.type", "must be \"function\"");
    const OJson* f = field(tc, "function");
    if (!f || !f->is_object()) wrong("tool_choice.function", "an object", f ? *f : OJson());
    r.tool_choice = "function";
    r.tool_choice_name = str_field(*f, "name", "tool_choice.function.name", true);
    if (!names.count(r.tool_choice_name))
      invalid("tool_choice.function.name", "names no tool in 'tools', found \"" + shown(r.tool_choice_name) + "\"");
  } else {
    wrong("tool_choice", "a string or an object", tc);
  }
  if (r.tool_choice != "none" && r.tool_choice != "auto" && names.empty())
    invalid("tool_choice", "asks for a tool call but 'tools' is empty or absent");
  r.template_vars["tool_choice"] = dump(tc);
}

void parse_template_vars(const OJson& j, GenRequest& r) {
  if (const OJson* e = field(j, "enable_thinking")) {
    if (!e->is_boolean()) wrong("enable_thinking", "a boolean", *e);
    r.template_vars["enable_thinking"] = dump(*e);
  }
  if (const OJson* e = field(j, "reasoning_effort")) {
    if (!e->is_string()) wrong("reasoning_effort", "a string", *e);
    const std::string& s = e->get_ref<const std::string&>();
    if (s != "none" && s != "minimal" && s != "low" && s != "medium" && s != "high")
      invalid("reasoning_effort", "must be none, minimal, low, medium or high, found \"" + shown(s) + "\"");
    r.template_vars["reasoning_effort"] = dump(*e);
  }
  const OJson* kw = field(j, "chat_template_kwargs");
  if (!kw) return;
  if (!kw->is_object()) wrong("chat_template_kwargs", "an object", *kw);
  static const std::set<std::string> kReserved = {"messages", "tools", "documents", "add_generation_prompt",
                                                  "bos_token", "eos_token", "raise_exception", "strftime_now",
                                                  "namespace", "range", "dict", "loop"};
  for (const auto& [k, v] : kw->items()) {
    const std::string name = "chat_template_kwargs." + shown(k);
    bool ident = !k.empty() && k.size() <= 64 && !(k[0] >= '0' && k[0] <= '9');
    for (char c : k) ident = ident && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_');
    if (!ident) invalid(name, "is not a template variable name (letters, digits and '_', at most 64)");
    if (kReserved.count(k)) invalid(name, "is set by the server; give it in its own field");
    r.template_vars[k] = dump(v);
  }
}

}  // namespace

void check_function_name(const std::string& n, const std::string& name) {
  if (n.empty() || n.size() > 64) invalid(name, "must be 1 to 64 characters, found " + std::to_string(n.size()));
  for (char c : n)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' ||
          c == '.' || c == ':'))
      invalid(name, "may hold letters, digits, '_', '-', '.' and ':' only, found \"" + shown(n) + "\"");
}

void parse_chat_tools(const std::string& body, GenRequest& r) {
  const OJson j = OJson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw ApiError(400, "the request body is not valid JSON", "", "invalid_json");
  if (const OJson* m = field(j, "messages"); m && m->is_array() && m->size() == r.messages.size())
    for (size_t i = 0; i < m->size(); ++i)
      parse_message((*m)[i], "messages[" + std::to_string(i) + "]", r.messages[i]);
  std::set<std::string> names;
  if (const OJson* t = field(j, "tools")) names = parse_tools(*t, r);
  if (const OJson* tc = field(j, "tool_choice")) parse_tool_choice(*tc, names, r);
  parse_template_vars(j, r);
}

}  // namespace nvfp4::server

// ChatTemplate: parse a Jinja chat template once, render it for a conversation with the variables
// transformers' render_jinja_template passes (messages, tools=None, documents=None,
// add_generation_prompt, bos_token, eos_token, extra kwargs) and its globals (raise_exception,
// strftime_now) plus jinja2's (namespace, range, dict).
#include <ctime>

#include "nvfp4/chat.h"
#include "nvfp4/error.h"
#include "text/chat_builtin.h"
#include "text/chat_tools.h"
#include "text/jinja.h"

namespace nvfp4 {

namespace {

Error template_error(const std::string& source, const jinja::TemplateError& e) {
  return Error(source, "", "chat template line " + std::to_string(e.line) + ": " + e.rule, e.expected, e.found);
}

std::tm date_tm(const std::optional<ChatDate>& d) {
  std::tm tm{};
  if (!d) {
    const std::time_t now = std::time(nullptr);
    localtime_r(&now, &tm);
    return tm;
  }
  tm.tm_year = d->year - 1900;
  tm.tm_mon = d->month - 1;
  tm.tm_mday = d->day;
  tm.tm_hour = d->hour;
  tm.tm_min = d->minute;
  tm.tm_sec = d->second;
  const std::time_t t = timegm(&tm);  // normalizes, fills weekday and day of the year
  std::tm out{};
  gmtime_r(&t, &out);
  return out;
}

jinja::Value range_fn(jinja::Evaluator&, jinja::CallArgs& a) {
  using jinja::Value;
  if (!a.kw.empty() || a.pos.empty() || a.pos.size() > 3) jinja::fail(0, "TypeError: range() takes 1 to 3 integers");
  int64_t v[3] = {0, 0, 1};
  for (size_t k = 0; k < a.pos.size(); ++k) {
    if (a.pos[k].t != jinja::Type::Int) jinja::fail(0, "TypeError: range() takes integers", "int", jinja::type_name(a.pos[k]));
    v[a.pos.size() == 1 ? 1 : k] = a.pos[k].i;
  }
  if (v[2] == 0) jinja::fail(0, "ValueError: range() step must not be zero");
  jinja::List o;
  for (int64_t i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2]) {
    if (o.size() >= 100000) jinja::fail(0, "OverflowError: range too big", "at most 100000 items (jinja2's sandbox)");
    o.push_back(Value::integer(i));
  }
  return Value::list(std::move(o));
}

}  // namespace

ChatTemplate ChatTemplate::parse(const std::string& text, const std::string& source) {
  if (text.empty())
    throw Error(source, "", "no chat template (tokenizer.chat_template)", "a Jinja chat template",
                "none; give --chat-template NAME or run without --chat");
  if (!jinja::utf8_valid(text)) throw Error(source, "", "chat template is not valid UTF-8", "UTF-8 text", "invalid bytes");
  ChatTemplate t;
  try {
    t.prog_ = std::make_shared<const jinja::Program>(jinja::parse(jinja::lex(text)));
  } catch (const jinja::TemplateError& e) {
    throw template_error(source, e);
  }
  t.text_ = text;
  t.source_ = source;
  return t;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, const ChatRenderOptions& o) const {
  using jinja::Value;
  auto check_text = [&](const std::string& s, const std::string& what) {
    if (!jinja::utf8_valid(s)) throw Error(source_, "", "chat input is not valid UTF-8", "UTF-8 text", what);
  };
  jinja::Globals g;
  jinja::List msgs;
  const bool args_as_text = chat_json::template_wants_text_arguments(text_);
  for (const auto& m : messages) msgs.push_back(chat_json::message(m, args_as_text, source_));
  check_text(o.bos_token, "bos_token");
  check_text(o.eos_token, "eos_token");
  g.vars.emplace_back("messages", Value::list(std::move(msgs)));
  g.vars.emplace_back("tools", o.tools_json.empty() ? Value::none() : chat_json::parse(o.tools_json, source_, "tools"));
  g.vars.emplace_back("documents", Value::none());
  g.vars.emplace_back("add_generation_prompt", Value::boolean(o.add_generation_prompt));
  g.vars.emplace_back("bos_token", Value::str(o.bos_token));
  g.vars.emplace_back("eos_token", Value::str(o.eos_token));
  for (const auto& [k, v] : o.vars) {
    for (const auto& [name, unused] : g.vars) {
      (void)unused;
      if (name == k) throw Error(source_, "", "chat template variable '" + k + "' is set by the renderer", "another name", k);
    }
    if (std::holds_alternative<bool>(v)) {
      g.vars.emplace_back(k, Value::boolean(std::get<bool>(v)));
    } else {
      check_text(std::get<std::string>(v), "variable " + k);
      g.vars.emplace_back(k, Value::str(std::get<std::string>(v)));
    }
  }
  for (const auto& [k, v] : o.json_vars) {
    for (const auto& [name, unused] : g.vars) {
      (void)unused;
      if (name == k) throw Error(source_, "", "chat template variable '" + k + "' is set by the renderer", "another name", k);
    }
    g.vars.emplace_back(k, chat_json::parse(v, source_, "variable " + k));
  }
  g.vars.emplace_back("raise_exception", Value::func([](jinja::Evaluator&, jinja::CallArgs& a) -> Value {
    const std::string msg = a.pos.empty() ? "" : jinja::to_str(a.pos[0], 0);
    throw jinja::TemplateError{0, "raise_exception: " + msg, "", ""};
  }));
  const std::tm tm = date_tm(o.date);
  g.vars.emplace_back("strftime_now", Value::func([tm](jinja::Evaluator&, jinja::CallArgs& a) {
    if (a.pos.size() != 1 || a.pos[0].t != jinja::Type::Str) jinja::fail(0, "TypeError: strftime_now(format) takes a string");
    if (a.pos[0].s.size() > 256) jinja::fail(0, "strftime_now: format too long", "at most 256 bytes");
    // A naive datetime (what transformers formats) has no time zone: %Z/%z would differ.
    if (a.pos[0].s.find("%Z") != std::string::npos || a.pos[0].s.find("%z") != std::string::npos)
      jinja::fail(0, "unsupported construct: strftime_now with a time zone directive");
    char buf[4096];
    const size_t n = std::strftime(buf, sizeof buf, a.pos[0].s.c_str(), &tm);
    if (n == 0 && !a.pos[0].s.empty()) jinja::fail(0, "unsupported construct: strftime_now format with an empty result");
    return Value::str(std::string(buf, n));
  }));
  g.vars.emplace_back("namespace", Value::func([](jinja::Evaluator& ev, jinja::CallArgs& a) {
    Value ns;
    ns.t = jinja::Type::Object;
    ns.o = std::make_shared<jinja::Object>();
    ns.o->kind = "namespace";
    ns.o->mutable_attrs = true;
    ev.track(ns.o);
    for (const auto& p : a.pos) {
      if (p.t != jinja::Type::Dict) jinja::fail(0, "TypeError: namespace() takes keyword arguments or a dict");
      for (const auto& [k, v] : p.d->items) ns.o->attrs.set(k, v);
    }
    for (const auto& [k, v] : a.kw) ns.o->attrs.set(k, v);
    return ns;
  }));
  g.vars.emplace_back("dict", Value::func([](jinja::Evaluator&, jinja::CallArgs& a) {
    if (!a.pos.empty()) jinja::fail(0, "unsupported construct: dict() with positional arguments");
    Value d = Value::dict();
    for (const auto& [k, v] : a.kw) d.d->set(k, v);
    jinja::seal_dict(d);
    return d;
  }));
  g.vars.emplace_back("range", Value::func(range_fn));
  jinja::Limits lim;
  lim.max_output = o.max_output;
  lim.max_steps = o.max_steps;
  lim.max_depth = o.max_depth;
  try {
    return jinja::render(*prog_, g, lim);
  } catch (const jinja::TemplateError& e) {
    throw template_error(source_, e);
  }
}

}  // namespace nvfp4

namespace nvfp4 {

bool ChatTemplate::takes_tools() const { return text_.find("tools") != std::string::npos; }

std::vector<std::string> ChatTemplate::builtin_names() {
  std::vector<std::string> names;
  for (const auto& b : builtin_chat_templates()) names.push_back(b.name);
  return names;
}

std::string ChatTemplate::builtin_name() const {
  for (const auto& b : builtin_chat_templates())
    if (b.text == text_) return b.name;
  return "";
}

std::string ChatTemplate::describe() const {
  const std::string b = builtin_name();
  if (source_.starts_with("built-in")) return source_;
  return "from " + source_ + (b.empty() ? "" : " (the text of built-in '" + b + "')");
}

ChatTemplate ChatTemplate::builtin(const std::string& name) {
  for (const auto& b : builtin_chat_templates())
    if (b.name == name) return parse(b.text, "built-in chat template '" + name + "'");
  std::string known;
  for (const auto& n : builtin_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("", "--chat-template", "unknown chat template '" + name + "'", "one of: " + known, name);
}

}  // namespace nvfp4

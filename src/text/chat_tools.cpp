// JSON -> Jinja values for chat requests with tools (see chat_tools.h).
#include "text/chat_tools.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "nvfp4/chat.h"
#include "nvfp4/error.h"

namespace nvfp4::chat_json {
namespace {

using OJson = nlohmann::ordered_json;
constexpr int kMaxDepth = 64;

jinja::Value to_value(const OJson& j, int depth, const std::string& source, const std::string& what) {
  using jinja::Value;
  if (depth > kMaxDepth) throw Error(source, what, "JSON nests too deep", "at most 64 levels", "more");
  switch (j.type()) {
    case OJson::value_t::null: return Value::none();
    case OJson::value_t::boolean: return Value::boolean(j.get<bool>());
    case OJson::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case OJson::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw Error(source, what, "integer out of range", "at most 2^63-1", std::to_string(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case OJson::value_t::number_float: return Value::real(j.get<double>());
    case OJson::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      if (!jinja::utf8_valid(s)) throw Error(source, what, "chat input is not valid UTF-8", "UTF-8 text", "invalid bytes");
      return Value::str(s);
    }
    case OJson::value_t::array: {
      jinja::List l;
      l.reserve(j.size());
      for (const auto& e : j) l.push_back(to_value(e, depth + 1, source, what));
      return Value::list(std::move(l));
    }
    case OJson::value_t::object: {
      Value d = Value::dict();
      for (const auto& [k, v] : j.items()) {
        if (!jinja::utf8_valid(k)) throw Error(source, what, "chat input is not valid UTF-8", "UTF-8 text", "invalid bytes");
        d.d->set(k, to_value(v, depth + 1, source, what));
      }
      jinja::seal_dict(d);
      return d;
    }
    default:
      throw Error(source, what, "not a JSON value", "JSON", "binary");
  }
}

void check_text(const std::string& s, const std::string& source, const std::string& what) {
  if (!jinja::utf8_valid(s)) throw Error(source, what, "chat input is not valid UTF-8", "UTF-8 text", "invalid bytes");
}

}  // namespace

jinja::Value parse(const std::string& text, const std::string& source, const std::string& what) {
  // Depth is checked while parsing (the callback sees each start of an object or array), so a
  // deeply nested input never reaches the recursive conversion.
  int depth = 0;
  bool too_deep = false;
  OJson j = OJson::parse(
      text,
      [&](int d, OJson::parse_event_t ev, OJson&) {
        if (ev == OJson::parse_event_t::object_start || ev == OJson::parse_event_t::array_start) {
          depth = d;
          if (d >= kMaxDepth) too_deep = true;
        }
        return !too_deep;
      },
      /*allow_exceptions=*/false);
  if (too_deep) throw Error(source, what, "JSON nests too deep", "at most 64 levels", "more");
  if (j.is_discarded()) throw Error(source, what, "not valid JSON", "a JSON value", "malformed text");
  (void)depth;
  return to_value(j, 0, source, what);
}

jinja::Value message(const ChatMessage& m, bool args_as_text, const std::string& source) {
  using jinja::Value;
  check_text(m.role, source, "a message role");
  check_text(m.content, source, "a message content");
  Value d = Value::dict();
  d.d->set("role", Value::str(m.role));
  d.d->set("content", Value::str(m.content));
  if (!m.tool_calls.empty()) {
    jinja::List calls;
    for (const auto& c : m.tool_calls) {
      check_text(c.id, source, "a tool call id");
      check_text(c.name, source, "a tool call name");
      Value args;
      if (!args_as_text) {
        try {
          args = parse(c.arguments, source, "tool call arguments");
        } catch (const Error&) {
          args = Value::undefined();
        }
      }
      if (args.t != jinja::Type::Dict) {
        check_text(c.arguments, source, "tool call arguments");
        args = Value::str(c.arguments);
      }
      Value fn = Value::dict();
      fn.d->set("name", Value::str(c.name));
      fn.d->set("arguments", std::move(args));
      jinja::seal_dict(fn);
      Value call = Value::dict();
      call.d->set("id", Value::str(c.id));
      call.d->set("type", Value::str("function"));
      call.d->set("function", std::move(fn));
      jinja::seal_dict(call);
      calls.push_back(std::move(call));
    }
    d.d->set("tool_calls", Value::list(std::move(calls)));
  }
  const auto opt = [&](const char* key, const std::optional<std::string>& v) {
    if (!v) return;
    check_text(*v, source, key);
    d.d->set(key, Value::str(*v));
  };
  opt("tool_call_id", m.tool_call_id);
  opt("name", m.name);
  opt("reasoning_content", m.reasoning_content);
  jinja::seal_dict(d);
  return d;
}

bool template_wants_text_arguments(const std::string& t) {
  return t.find("['arguments'] +") != std::string::npos || t.find(".arguments +") != std::string::npos;
}

}  // namespace nvfp4::chat_json

namespace nvfp4 {

std::map<std::string, std::string> chat_template_kwargs(const std::string& json_text, const std::string& source) {
  const auto j = nlohmann::ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw Error(source, "chat_template_kwargs", "not a JSON object of template variables", "{\"enable_thinking\": false}",
                json_text.substr(0, 80));
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) {
    bool ident = !k.empty() && k.size() <= 64 && !(k[0] >= '0' && k[0] <= '9');
    for (char c : k) ident = ident && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_');
    if (!ident)
      throw Error(source, "chat_template_kwargs." + k.substr(0, 64), "not a template variable name",
                  "letters, digits and '_', at most 64", k.substr(0, 64));
    out[k] = v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  return out;
}

}  // namespace nvfp4

#include "server/request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/output_grammar.h"
#include "server/request_framing.h"
#include "server/request_tools.h"

namespace nvfp4::server {
namespace {

using nlohmann::json;

// At most 64 printable ASCII characters of s, for messages.
std::string utf8_safe(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f && c != '"') ? static_cast<char>(c) : '?';
  return out;
}

json parse_object(const std::string& body) {
  if (json_too_deep(body, kMaxJsonDepth))
    throw ApiError(400, "the request body nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels", "", "invalid_json");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON", "", "invalid_json");
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object, found " + std::string(j.type_name()));
  return j;
}

// The field, or null when absent (OpenAI treats an explicit null as absent).
const json* field(const json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong(const std::string& name, const char* want, const json& v) {
  throw ApiError(400, "'" + name + "' must be " + want + ", found " + v.type_name(), name, "invalid_type");
}

[[noreturn]] void range(const std::string& name, const std::string& rule, const json& v) {
  throw ApiError(400, "'" + name + "' must be " + rule + ", found " + v.dump(-1, ' ', false, json::error_handler_t::replace),
                 name, "invalid_value");
}

bool get_bool(const json& j, const char* name, bool def) {
  const json* v = field(j, name);
  if (!v) return def;
  if (!v->is_boolean()) wrong(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<double> get_number(const json& j, const char* name) {
  const json* v = field(j, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong(name, "a number", *v);
  return v->get<double>();
}

// An integer (a float with an integral value, as JSON has one number type, is accepted).
std::optional<int64_t> get_int(const json& j, const char* name) {
  const json* v = field(j, name);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      range(name, "at most 2^63-1", *v);
    return v->get<int64_t>();
  }
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  wrong(name, "an integer", *v);
}

std::string text_content(const json& c, const std::string& name) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) wrong(name, "a string or an array of content parts", c);
  std::string out;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string pn = name + "[" + std::to_string(i) + "]";
    const json& p = c[i];
    if (!p.is_object()) wrong(pn, "an object", p);
    const json* type = field(p, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "text")
      throw ApiError(400, "'" + pn + ".type' must be \"text\" (only text content is supported)", pn + ".type", "invalid_value");
    const json* t = field(p, "text");
    if (!t || !t->is_string()) wrong(pn + ".text", "a string", t ? *t : json());
    out += t->get<std::string>();
  }
  return out;
}

void parse_messages(const json& j, GenRequest& r) {
  const json* m = field(j, "messages");
  if (!m) throw ApiError(400, "'messages' is required", "messages", "missing_field");
  if (!m->is_array()) wrong("messages", "an array", *m);
  if (m->empty()) throw ApiError(400, "'messages' must hold at least one message", "messages", "invalid_value");
  for (size_t i = 0; i < m->size(); ++i) {
    const std::string name = "messages[" + std::to_string(i) + "]";
    const json& msg = (*m)[i];
    if (!msg.is_object()) wrong(name, "an object", msg);
    const json* role = field(msg, "role");
    if (!role) throw ApiError(400, "'" + name + ".role' is required", name + ".role", "missing_field");
    if (!role->is_string()) wrong(name + ".role", "a string", *role);
    ChatMessage cm;
    cm.role = role->get<std::string>();
    if (cm.role == "developer") cm.role = "system";
    if (cm.role != "system" && cm.role != "user" && cm.role != "assistant" && cm.role != "tool")
      throw ApiError(400, "'" + name + ".role' must be system, developer, user, assistant or tool, found \"" +
                              utf8_safe(cm.role) + "\"",
                     name + ".role", "invalid_value");
    if (const json* c = field(msg, "content")) cm.content = text_content(*c, name + ".content");
    r.messages.push_back(std::move(cm));
  }
}

void parse_prompt(const json& j, GenRequest& r) {
  const json* p = field(j, "prompt");
  if (!p) throw ApiError(400, "'prompt' is required", "prompt", "missing_field");
  const json* v = p;
  if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) {
    if (p->size() != 1) throw ApiError(400, "'prompt' may hold one prompt only, found " + std::to_string(p->size()), "prompt", "invalid_value");
    v = &p->front();
  }
  if (v->is_string()) {
    r.prompt = v->get<std::string>();
    return;
  }
  if (!v->is_array()) wrong("prompt", "a string, an array of token ids, or an array of one of those", *v);
  r.prompt_is_ids = true;
  for (const json& t : *v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw ApiError(400, "'prompt' token ids must be non-negative integers", "prompt", "invalid_value");
    r.prompt_ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
}

void parse_stop(const json& j, GenRequest& r) {
  const json* s = field(j, "stop");
  if (!s) return;
  if (s->is_string()) {
    if (!s->get<std::string>().empty()) r.stop.push_back(s->get<std::string>());
    return;
  }
  if (!s->is_array()) wrong("stop", "a string or an array of strings", *s);
  if (s->size() > 4) throw ApiError(400, "'stop' may hold at most 4 strings, found " + std::to_string(s->size()), "stop", "invalid_value");
  for (const json& e : *s) {
    if (!e.is_string()) wrong("stop", "a string or an array of strings", e);
    if (!e.get<std::string>().empty()) r.stop.push_back(e.get<std::string>());
  }
}

}  // namespace

GenRequest parse_gen_request(const std::string& body, bool chat) {
  const json j = parse_object(body);
  GenRequest r;
  r.chat = chat;
  if (const json* m = field(j, "model")) {
    if (!m->is_string()) wrong("model", "a string", *m);
    r.model = m->get<std::string>();
  }
  if (chat) {
    parse_messages(j, r);
    parse_chat_tools(body, r);
  } else {
    parse_prompt(j, r);
  }

  const auto max_completion = get_int(j, "max_completion_tokens");
  const auto max_tokens = get_int(j, "max_tokens");
  const char* mt_name = max_completion ? "max_completion_tokens" : "max_tokens";
  if (const auto mt = max_completion ? max_completion : max_tokens) {
    if (*mt < 1) range(mt_name, "at least 1", *field(j, mt_name));
    r.max_tokens = *mt;
    r.max_tokens_field = mt_name;
  }
  if (const auto t = get_number(j, "temperature")) {
    if (!(*t >= 0 && *t <= 2)) range("temperature", "between 0 and 2", *field(j, "temperature"));
    r.sampling.temperature = static_cast<float>(*t);
  }
  if (const auto p = get_number(j, "top_p")) {
    if (!(*p > 0 && *p <= 1)) range("top_p", "in (0, 1]", *field(j, "top_p"));
    r.sampling.top_p = static_cast<float>(*p);
  }
  if (const auto k = get_int(j, "top_k")) {
    if (*k < 0 || *k > (1 << 30)) range("top_k", "between 0 and 2^30", *field(j, "top_k"));
    r.sampling.top_k = static_cast<int>(*k);
  }
  if (const auto s = get_int(j, "seed")) {
    r.sampling.seed = static_cast<uint64_t>(*s);
    r.seed_set = true;
  }
  if (const auto n = get_int(j, "n"); n && *n != 1)
    range("n", "1 (one choice per request)", *field(j, "n"));
  parse_stop(j, r);
  r.stream = get_bool(j, "stream", false);
  if (const json* so = field(j, "stream_options")) {
    if (!so->is_object()) wrong("stream_options", "an object", *so);
    r.include_usage = get_bool(*so, "include_usage", false);
  }
  // logprobs: chat's is a boolean with top_logprobs beside it; the legacy completions' is the
  // number of best tokens. At most 20 either way, as OpenAI's.
  const auto top_range = [&](const char* name, int64_t v) {
    if (v < 0 || v > 20) range(name, "between 0 and 20", *field(j, name));
    return static_cast<int>(v);
  };
  if (chat) {
    const bool lp = get_bool(j, "logprobs", false);
    const auto top = get_int(j, "top_logprobs");
    if (top && !lp)
      throw ApiError(400, "'top_logprobs' needs 'logprobs': true", "top_logprobs", "invalid_value");
    if (lp) r.top_logprobs = top ? top_range("top_logprobs", *top) : 0;
  } else if (const auto lp = get_int(j, "logprobs")) {
    r.top_logprobs = top_range("logprobs", *lp);
  }
  r.grammar = body_output_grammar(body);  // (read again: key order kept)
  r.cache_prompt = get_bool(j, "cache_prompt", true);
  r.return_tokens = get_bool(j, "return_tokens", false);
  return r;
}

TokenizeRequest parse_tokenize_request(const std::string& body) {
  const json j = parse_object(body);
  TokenizeRequest r;
  const json* c = field(j, "content");
  if (!c) throw ApiError(400, "'content' is required", "content", "missing_field");
  if (!c->is_string()) wrong("content", "a string", *c);
  r.content = c->get<std::string>();
  r.add_special = get_bool(j, "add_special", false);
  r.parse_special = get_bool(j, "parse_special", true);
  return r;
}

std::vector<int32_t> parse_detokenize_request(const std::string& body) {
  const json j = parse_object(body);
  const json* t = field(j, "tokens");
  if (!t) throw ApiError(400, "'tokens' is required", "tokens", "missing_field");
  if (!t->is_array()) wrong("tokens", "an array of token ids", *t);
  std::vector<int32_t> ids;
  for (const json& e : *t) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw ApiError(400, "'tokens' must hold non-negative integer token ids", "tokens", "invalid_value");
    ids.push_back(static_cast<int32_t>(e.get<int64_t>()));
  }
  return ids;
}

}  // namespace nvfp4::server

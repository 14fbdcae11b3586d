#include "server/json_fields.h"

#include <cmath>
#include <limits>

#include "server/api_error.h"
#include "server/request_framing.h"

namespace nvfp4::server {

OJson parse_body_object(const std::string& body) {
  if (json_too_deep(body, kMaxJsonDepth))
    throw ApiError(400, "the request body nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels", "", "invalid_json");
  OJson j = OJson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON", "", "invalid_json");
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object, found " + std::string(j.type_name()));
  return j;
}

const OJson* field(const OJson& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

const OJson& required(const OJson& j, const char* key, const std::string& name) {
  const OJson* v = field(j, key);
  if (!v) throw ApiError(400, "'" + name + "' is required", name, "missing_field");
  return *v;
}

void wrong_type(const std::string& name, const char* want, const OJson& v) {
  throw ApiError(400, "'" + name + "' must be " + want + ", found " + v.type_name(), name, "invalid_type");
}

void bad_value(const std::string& name, const std::string& msg) {
  throw ApiError(400, "'" + name + "' " + msg, name, "invalid_value");
}

std::string str_field(const OJson& j, const char* key, const std::string& name, bool need) {
  const OJson* v = need ? &required(j, key, name) : field(j, key);
  if (!v) return "";
  if (!v->is_string()) wrong_type(name, "a string", *v);
  return v->get<std::string>();
}

std::optional<double> num_field(const OJson& j, const char* key, const std::string& name) {
  const OJson* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  return v->get<double>();
}

std::optional<int64_t> int_field(const OJson& j, const char* key, const std::string& name) {
  const OJson* v = field(j, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad_value(name, "must be at most 2^63-1");
    return v->get<int64_t>();
  }
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  wrong_type(name, "an integer", *v);
}

std::optional<bool> bool_field(const OJson& j, const char* key, const std::string& name) {
  const OJson* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::string shown(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f && c != '"') ? static_cast<char>(c) : '?';
  return out;
}

std::string dump_ordered(const OJson& j) { return j.dump(-1, ' ', false, OJson::error_handler_t::replace); }

}  // namespace nvfp4::server

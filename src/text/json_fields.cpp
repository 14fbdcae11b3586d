#include "text/json_fields.h"

namespace nvfp4::jsonf {

Json parse(const std::string& text, const std::string& file) {
  Json j = Json::parse(
      text,
      [&](int depth, Json::parse_event_t, Json&) {
        if (depth > 64) fail(file, "", "JSON nested at most 64 levels", "deeper");
        return true;
      },
      /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(file, "", "valid JSON", "a syntax error");
  return j;
}

void fail(const std::string& file, const std::string& field, const std::string& expected,
          const std::string& found) {
  throw Error(file, "", field.empty() ? "contents" : "field '" + field + "'", expected, found);
}

std::string describe(const Json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.size() > 200) s = s.substr(0, 200) + "...";
    return "\"" + s + "\"";
  }
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array of " + std::to_string(v.size());
  return v.dump();
}

const Json& member(const Json& obj, const char* key, const std::string& file, const std::string& field) {
  if (!obj.is_object()) fail(file, field, "an object", describe(obj));
  auto it = obj.find(key);
  if (it == obj.end()) fail(file, field + "." + key, "present", "absent");
  return *it;
}

const Json* optional(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string str(const Json& v, const std::string& file, const std::string& field) {
  if (!v.is_string()) fail(file, field, "a string", describe(v));
  return v.get<std::string>();
}

bool boolean(const Json& obj, const char* key, bool dflt, const std::string& file, const std::string& field) {
  const Json* v = optional(obj, key);
  if (!v) return dflt;
  if (!v->is_boolean()) fail(file, field + "." + key, "true or false", describe(*v));
  return v->get<bool>();
}

int64_t integer(const Json& v, const std::string& file, const std::string& field) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
    fail(file, field, "an integer", describe(v));
  return v.get<int64_t>();
}

}  // namespace nvfp4::jsonf

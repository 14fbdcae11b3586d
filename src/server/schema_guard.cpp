// The JSON-schema keywords the grammar enforces (see schema_guard.h).
#include "server/schema_guard.h"

#include <map>
#include <set>

#include "server/api_error.h"
#include "server/ebnf_literal.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw ApiError(400, "'" + path + "' " + why, path, "unsupported_schema");
}

// Constrain nothing (JSON Schema's annotations, and OpenAPI's nullable-free extras).
const std::set<std::string>& annotations() {
  static const std::set<std::string> s = {"title", "description", "default", "examples", "$schema", "$id",
                                          "$comment", "deprecated", "readOnly", "writeOnly", "$anchor",
                                          "contentMediaType", "contentEncoding", "discriminator"};
  return s;
}
// Enforced by xgrammar 0.2.8's converter (json_schema_converter.cc).
const std::set<std::string>& enforced() {
  static const std::set<std::string> s = {
      "type", "properties", "required", "additionalProperties", "unevaluatedProperties", "patternProperties",
      "propertyNames", "minProperties", "maxProperties", "items", "prefixItems", "unevaluatedItems", "minItems",
      "maxItems", "minLength", "maxLength", "pattern", "format", "enum", "const", "anyOf", "oneOf", "allOf",
      "$ref", "$defs", "definitions", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"};
  return s;
}
const std::set<std::string>& formats() {  // xgrammar's built-in formats
  static const std::set<std::string> s = {"date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6",
                                          "json-pointer", "relative-json-pointer", "time", "uri", "uri-reference",
                                          "uri-template", "uuid"};
  return s;
}

const OJson* resolve(const OJson& s, const OJson& doc) {
  if (!s.is_object() || !s.contains("$ref") || !s["$ref"].is_string()) return &s;
  const std::string& ref = s["$ref"].get_ref<const std::string&>();
  if (ref.rfind("#/", 0) != 0) return &s;
  try {
    return &doc.at(OJson::json_pointer(ref.substr(1)));
  } catch (const std::exception&) {
    return &s;
  }
}

// The JSON types a schema admits when it says so ("type"; const and enum by their values); empty: unknown.
std::set<std::string> types_of(const OJson& s) {
  std::set<std::string> t;
  if (!s.is_object()) return t;
  const auto add_value = [&](const OJson& v) {
    t.insert(v.is_object() ? "object" : v.is_array() ? "array" : v.is_string() ? "string" : v.is_boolean() ? "boolean"
             : v.is_null() ? "null" : "number");
  };
  if (s.contains("const")) {
    add_value(s["const"]);
  } else if (s.contains("enum") && s["enum"].is_array() && !s["enum"].empty()) {
    for (const auto& v : s["enum"]) add_value(v);
  } else if (s.contains("type") && s["type"].is_string()) {
    t.insert(s["type"].get<std::string>());
  } else if (s.contains("type") && s["type"].is_array()) {
    for (const auto& v : s["type"])
      if (v.is_string()) t.insert(v.get<std::string>());
  }
  if (t.count("integer")) t.insert("number");  // an integer is a number
  return t;
}

// The values a required property of an object schema is pinned to (const or enum), by name.
std::map<std::string, std::set<std::string>> pinned(const OJson& s, const OJson& doc) {
  std::map<std::string, std::set<std::string>> out;
  if (!s.is_object() || !s.contains("properties") || !s["properties"].is_object() || !s.contains("required") ||
      !s["required"].is_array())
    return out;
  for (const auto& r : s["required"]) {
    if (!r.is_string() || !s["properties"].contains(r.get<std::string>())) continue;
    const OJson& p = *resolve(s["properties"][r.get<std::string>()], doc);
    if (!p.is_object()) continue;
    std::set<std::string> v;
    if (p.contains("const")) v.insert(p["const"].dump());
    else if (p.contains("enum") && p["enum"].is_array())
      for (const auto& e : p["enum"]) v.insert(e.dump());
    if (!v.empty()) out[r.get<std::string>()] = std::move(v);
  }
  return out;
}

bool disjoint(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const auto& x : a)
    if (b.count(x)) return false;
  return true;
}

// Two branches of a oneOf that no value matches both: their types differ, or both are objects
// that pin one required property to different values (a discriminator).
bool provably_disjoint(const OJson& a0, const OJson& b0, const OJson& doc) {
  const OJson& a = *resolve(a0, doc);
  const OJson& b = *resolve(b0, doc);
  const auto ta = types_of(a), tb = types_of(b);
  if (!ta.empty() && !tb.empty() && disjoint(ta, tb)) return true;
  const auto pa = pinned(a, doc), pb = pinned(b, doc);
  for (const auto& [k, v] : pa)
    if (auto it = pb.find(k); it != pb.end() && disjoint(v, it->second)) return true;
  return false;
}

void walk(const OJson& s, const OJson& doc, const std::string& path, int depth) {
  if (depth > 64) refuse(path, "nests deeper than 64 schemas");
  if (s.is_boolean()) return;
  if (!s.is_object()) refuse(path, "must be a schema (an object or a boolean)");
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    const std::string p = path + "." + k;
    if (annotations().count(k)) continue;
    if (!enforced().count(k))
      refuse(p, "is not a keyword structured output enforces (it would be ignored, not enforced)");
    const OJson& v = it.value();
    if (k == "properties" || k == "$defs" || k == "definitions" || k == "patternProperties") {
      if (!v.is_object()) refuse(p, "must be an object");
      for (auto e = v.begin(); e != v.end(); ++e) walk(e.value(), doc, p + "." + e.key(), depth + 1);
    } else if (k == "anyOf" || k == "oneOf" || k == "allOf" || k == "prefixItems") {
      if (!v.is_array() || v.empty()) refuse(p, "must be a non-empty array");
      for (size_t i = 0; i < v.size(); ++i) walk(v[i], doc, p + "[" + std::to_string(i) + "]", depth + 1);
      if (k == "allOf" && v.size() > 1)
        refuse(p, "may hold one schema only (the grammar cannot intersect several)");
      if (k == "oneOf")
        for (size_t i = 0; i < v.size(); ++i)
          for (size_t j = i + 1; j < v.size(); ++j)
            if (!provably_disjoint(v[i], v[j], doc))
              refuse(p, "branches " + std::to_string(i) + " and " + std::to_string(j) +
                            " may both match a value (oneOf is enforced when its branches differ in type or in a "
                            "required property's const/enum; use anyOf otherwise)");
    } else if (k == "items" || k == "additionalProperties" || k == "unevaluatedProperties" || k == "unevaluatedItems" ||
               k == "propertyNames") {
      if (v.is_array()) refuse(p, "must be a schema (tuples are prefixItems)");
      walk(v, doc, p, depth + 1);
    } else if (k == "format") {
      if (!v.is_string() || !formats().count(v.get<std::string>()))
        refuse(p, "must be one of the formats structured output enforces: date, date-time, duration, email, "
                  "hostname, ipv4, ipv6, json-pointer, relative-json-pointer, time, uri, uri-reference, "
                  "uri-template, uuid");
    } else if (k == "multipleOf") {
      const auto t = types_of(s);
      if (!(t.size() == 2 && t.count("integer")) || !v.is_number_integer() || v.get<int64_t>() <= 0)
        refuse(p, "is enforced only as a positive integer on \"type\": \"integer\"");
    }
  }
  if (s.contains("pattern") && s.contains("format"))
    refuse(path + ".format", "cannot be enforced beside a pattern (put the format's shape in the pattern)");
  if ((s.contains("pattern") || s.contains("format")) && (s.contains("minLength") || s.contains("maxLength")))
    refuse(path + (s.contains("minLength") ? ".minLength" : ".maxLength"),
           "cannot be enforced beside a pattern or a format (put the length in the pattern)");
}

}  // namespace

void check_schema_supported(const OJson& schema, const std::string& path) { walk(schema, schema, path, 0); }

namespace {

const std::string& date_re() {
  static const std::string leap = "[1-9][0-9](0[48]|[2468][048]|[13579][26])|([2468][048]|[13579][26])00";
  static const std::string md = "(0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
                                "02-(0[1-9]|1[0-9]|2[0-8])";
  static const std::string d = "([1-9][0-9]{3}-(" + md + ")|(" + leap + ")-02-29)";
  return d;
}
const std::string& time_re() {
  static const std::string t =
      "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
  return t;
}

std::string exact_pattern(const std::string& format) {
  static const std::string dec = "(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
  if (format == "date") return "^" + date_re() + "$";
  if (format == "time") return "^" + time_re() + "$";
  if (format == "date-time") return "^" + date_re() + "T" + time_re() + "$";
  if (format == "ipv4") return "^" + dec + "([.]" + dec + "){3}$";
  return "";
}

// A string's minLength/maxLength as a pattern of as many characters of the class xgrammar 0.2.8
// gives a bounded string ([^"\\\r\n], no escapes): the same language, but xgrammar compiles a
// pattern of at most kRegexMaxRepeat (128, ebnf_literal.h) repetitions into automaton states
// whose token masks it caches, where it walks a bounded repetition with a run-time counter and
// checks the vocabulary's string tokens one by one at every position (measured on SmolLM2's 49k
// tokens: 0.1 to 1.5 ms a token inside a maxLength-24 string, 0.06 ms as the pattern). Left alone
// above that (xgrammar keeps a counter then either way), beside enum or const, or when the type
// may not be a string.
void length_pattern(OJson& s) {
  if (s.contains("pattern") || s.contains("format") || s.contains("enum") || s.contains("const")) return;
  const auto t = s.find("type");
  if (t == s.end()) return;
  bool string = t->is_string() && *t == "string";
  if (t->is_array())
    for (const auto& e : *t) string = string || (e.is_string() && e == "string");
  if (!string) return;
  const auto lo = s.find("minLength"), hi = s.find("maxLength");
  if (lo == s.end() && hi == s.end()) return;
  if ((lo != s.end() && !lo->is_number_unsigned()) || (hi != s.end() && !hi->is_number_unsigned())) return;
  const uint64_t m = lo == s.end() ? 0 : lo->get<uint64_t>();
  const bool bounded = hi != s.end();
  const uint64_t n = bounded ? hi->get<uint64_t>() : 0;
  if ((bounded ? n : m) > static_cast<uint64_t>(kRegexMaxRepeat) || (bounded && m > n)) return;
  s["pattern"] = "^[^\"\\\\\\r\\n]{" + std::to_string(m) + "," + (bounded ? std::to_string(n) : "") + "}$";
  s.erase("minLength");
  s.erase("maxLength");
}

void rewrite(OJson& s) {
  if (s.is_array()) {
    for (auto& e : s) rewrite(e);
    return;
  }
  if (!s.is_object()) return;
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    if (k == "enum" || k == "const" || k == "default" || k == "examples") continue;  // values, not schemas
    if (k == "properties" || k == "$defs" || k == "definitions" || k == "patternProperties") {
      if (it->is_object())
        for (auto& e : *it) rewrite(e);
    } else {
      rewrite(*it);
    }
  }
  if (const auto f = s.find("format"); f != s.end() && f->is_string() && !s.contains("pattern")) {
    const std::string p = exact_pattern(f->get<std::string>());
    if (!p.empty()) {
      s.erase("format");
      s["pattern"] = p;
    }
  }
  length_pattern(s);
}

}  // namespace

OJson exact_formats(const OJson& schema) {
  OJson s = schema;
  rewrite(s);
  return s;
}

}  // namespace nvfp4::server

// Reading a request body's fields with their key order kept (templates print tools with tojson:
// the order is the client's), for the routes whose bodies are translated into chat requests
// (/v1/responses, /v1/messages). Every refusal is ApiError 400 naming the field by its path.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace nvfp4::server {

using OJson = nlohmann::ordered_json;

// The body as a JSON object (too deep, malformed or not an object: 400).
OJson parse_body_object(const std::string& body);
// The field, or null when absent or null.
const OJson* field(const OJson& j, const char* name);
// The field, which must be there (400 "'NAME' is required").
const OJson& required(const OJson& j, const char* key, const std::string& name);
[[noreturn]] void wrong_type(const std::string& name, const char* want, const OJson& v);
[[noreturn]] void bad_value(const std::string& name, const std::string& msg);
// A string field ("" when absent and not required).
std::string str_field(const OJson& j, const char* key, const std::string& name, bool need = false);
std::optional<double> num_field(const OJson& j, const char* key, const std::string& name);
std::optional<int64_t> int_field(const OJson& j, const char* key, const std::string& name);
std::optional<bool> bool_field(const OJson& j, const char* key, const std::string& name);
// At most 64 printable ASCII characters of s, for messages.
std::string shown(const std::string& s);
std::string dump_ordered(const OJson& j);

}  // namespace nvfp4::server

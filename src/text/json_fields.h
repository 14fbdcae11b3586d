// Checked access to the JSON of HF tokenizer files: every missing field or wrong type becomes an
// nvfp4::Error naming the file, the field's path, what was expected and what was found.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "nvfp4/error.h"

namespace nvfp4::jsonf {

using Json = nlohmann::json;

// Parses text; refuses malformed JSON and nesting deeper than 64 levels.
Json parse(const std::string& text, const std::string& file);

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& expected,
                       const std::string& found);
// A short description of what a value is, for "found".
std::string describe(const Json& v);

const Json& member(const Json& obj, const char* key, const std::string& file, const std::string& field);
const Json* optional(const Json& obj, const char* key);  // nullptr when absent or null
std::string str(const Json& v, const std::string& file, const std::string& field);
bool boolean(const Json& obj, const char* key, bool dflt, const std::string& file, const std::string& field);
int64_t integer(const Json& v, const std::string& file, const std::string& field);

}  // namespace nvfp4::jsonf

// A tolerant pre-pass over config.json (json_config.h): each bare Infinity, -Infinity or NaN
// outside a string becomes a marker string ("\u0000Infinity", ...), the text is parsed as strict
// JSON, and the markers are turned into float values in the tree. Inside strings nothing changes.
#include "io/json_config.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

constexpr std::string_view kWords[] = {"-Infinity", "Infinity", "NaN"};
// The marker a bare word becomes: U+0000, the tag, the word ("\u0000nvfp4:Infinity").
constexpr std::string_view kTag = "nvfp4:";

bool word_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '+' || ch == '-'; }

// Turns the markers back into floats, counting them in n.
void unmark(nlohmann::json& j, size_t& n) {
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s.size() < 2 + kTag.size() || s[0] != '\0' || s.compare(1, kTag.size(), kTag) != 0) return;
    const std::string_view w = std::string_view(s).substr(1 + kTag.size());
    if (w == "Infinity" || w == "-Infinity" || w == "NaN") ++n;
    if (w == "Infinity") j = std::numeric_limits<double>::infinity();
    else if (w == "-Infinity") j = -std::numeric_limits<double>::infinity();
    else if (w == "NaN") j = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  // transformers 5's own spelling of the same values: {"__float__": "Infinity"}.
  if (j.is_object() && j.size() == 1 && j.contains("__float__") && j["__float__"].is_string()) {
    const std::string w = j["__float__"].get<std::string>();
    if (w == "Infinity") j = std::numeric_limits<double>::infinity();
    else if (w == "-Infinity") j = -std::numeric_limits<double>::infinity();
    else if (w == "NaN") j = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  if (j.is_array() || j.is_object())
    for (auto& v : j) unmark(v, n);
}

// Non-finite numbers as marker strings (a copy of the tree), for dump_config_json.
void mark(nlohmann::json& j) {
  if (j.is_number_float()) {
    const double x = j.get<double>();
    if (std::isfinite(x)) return;
    j = std::string(1, '\0') + std::string(kTag) + (std::isnan(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity");
    return;
  }
  if (j.is_array() || j.is_object())
    for (auto& v : j) mark(v);
}

}  // namespace

std::string dump_config_json(const nlohmann::json& j, int indent) {
  nlohmann::json c = j;
  mark(c);
  std::string text = c.dump(indent);
  for (const std::string_view w : kWords) {
    const std::string quoted = "\"\\u0000" + std::string(kTag) + std::string(w) + "\"";
    for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + w.size()))
      text.replace(at, quoted.size(), w);
  }
  return text;
}

nlohmann::json parse_config_json(const std::string& text, const std::string& file) {
  std::string out;
  out.reserve(text.size() + 32);
  bool in_string = false;
  size_t words = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      out += ch;
      if (ch == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
      out += ch;
      continue;
    }
    bool replaced = false;
    if (i == 0 || !word_char(text[i - 1]))
      for (const std::string_view w : kWords)
        if (text.compare(i, w.size(), w) == 0 && (i + w.size() == text.size() || !word_char(text[i + w.size()]))) {
          out += "\"\\u0000";
          out += kTag;
          out += w;
          ++words;
          out += '"';
          i += w.size() - 1;
          replaced = true;
          break;
        }
    if (!replaced) out += ch;
  }
  nlohmann::json j = nlohmann::json::parse(out);
  size_t found = 0;
  unmark(j, found);
  // A string of the file that spells a marker itself would have been read as a number.
  if (found != words)
    throw Error(file, "", "config.json: no string spelling the marker \\u0000" + std::string(kTag) + "<word>",
                std::to_string(words) + " bare words", std::to_string(found) + " markers");
  return j;
}

nlohmann::json read_config_json_file(const std::string& file, const std::string& what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file, "", what + "'s config.json", "a readable file", "missing or unreadable");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    nlohmann::json j = parse_config_json(ss.str(), file);
    if (!j.is_object()) throw Error(file, "", "config.json", "a JSON object", j.type_name());
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw Error(file, "", "config.json", "JSON", e.what());
  }
}

}  // namespace nvfp4

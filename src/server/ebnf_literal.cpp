// See ebnf_literal.h.
#include "server/ebnf_literal.h"

namespace nvfp4::server {

std::string ebnf_literal(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += static_cast<char>(c);
    else if (c == '\n') o += "\\n";
    else if (c == '\r') o += "\\r";
    else if (c == '\t') o += "\\t";
    else if (c < 0x20) {
      static const char* hex = "0123456789abcdef";
      o += "\\x";
      o += hex[c >> 4];
      o += hex[c & 15];
    } else o += static_cast<char>(c);
  }
  return o + "\"";
}

// A loop over units, each a character other than the words' first one c, or c and what follows
// it up to the first character that leaves every word (a c there starts again; a word's last
// character is never allowed to complete it), then optionally c and a part of some word (the
// text's end). x_<w>_<k> / p_<w>_<k>: after c and the first k characters of word w.
std::string ebnf_text_without(const std::string& name, const std::vector<std::string>& words) {
  const std::string c = words.at(0).substr(0, 1);
  const std::string cls = c == "^" || c == "]" || c == "\\" || c == "-" ? "\\" + c : c;
  const auto esc = [](char ch) { return ch == '^' || ch == ']' || ch == '\\' || ch == '-' ? std::string("\\") + ch : std::string(1, ch); };
  std::string r, x_first, p_first, x_not = cls;
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string& s = words[w];
    const std::string id = name + "_" + std::to_string(w) + "_";
    if (s.size() < 2) continue;
    x_first += " | " + ebnf_literal(s.substr(1, 1)) + (s.size() > 2 ? " " + id + "x1" : "");
    p_first += " | " + ebnf_literal(s.substr(1, 1)) + (s.size() > 2 ? " " + id + "p1" : "");
    x_not += esc(s[1]);
    for (size_t k = 1; k + 1 < s.size(); ++k) {
      const char next = s[k + 1];
      const bool last = k + 2 == s.size();
      r += id + "x" + std::to_string(k) + " ::= [^" + cls + esc(next) + "] | " + ebnf_literal(c) + " " + name + "_xr";
      if (!last) r += " | " + ebnf_literal(std::string(1, next)) + " " + id + "x" + std::to_string(k + 1);
      r += "\n";
      r += id + "p" + std::to_string(k) + " ::= " + ebnf_literal(c) + " " + name + "_pr";
      if (!last) r += " | " + ebnf_literal(std::string(1, next)) + " " + id + "p" + std::to_string(k + 1);
      r += " | \"\"\n";
    }
  }
  r += name + "_xr ::= [^" + x_not + "] | " + ebnf_literal(c) + " " + name + "_xr" + x_first + "\n";
  r += name + "_pr ::= " + ebnf_literal(c) + " " + name + "_pr" + p_first + " | \"\"\n";
  r += name + " ::= ( [^" + cls + "] | " + ebnf_literal(c) + " " + name + "_xr )* ( " + ebnf_literal(c) + " " + name + "_pr )?\n";
  return r;
}

std::string ebnf_bounded_chars(const nlohmann::ordered_json& schema) {
  if (!schema.is_object()) return "";
  const auto bound = [&](const char* key, long long& out) {
    const auto it = schema.find(key);
    if (it == schema.end()) return true;
    if (!it->is_number_integer() && !it->is_number_unsigned()) return false;
    const long long v = it->get<long long>();
    if (v < 0 || v > kMaxBoundedLength) return false;
    out = v;
    return true;
  };
  long long lo = 0, hi = -1;
  if (!bound("minLength", lo) || !bound("maxLength", hi)) return "";
  if (lo == 0 && hi < 0) return "";
  if (hi >= 0 && lo > hi) return "";
  const std::string rep = "[^<]{" + std::to_string(lo) + "," + (hi >= 0 ? std::to_string(hi) : std::string()) + "}";
  // Up to 128 repetitions as xgrammar's Regex(...): compiled into automaton states whose token
  // masks it caches. Its EBNF repetition keeps a run-time counter instead and checks the
  // vocabulary's text tokens one by one at each position (SmolLM2: up to 8 ms for the token
  // before a 24-character bound's end, 0.15 ms as the Regex). The language is the same.
  if ((hi >= 0 ? hi : lo) <= kRegexMaxRepeat) return "Regex(\"" + rep + "\")";
  return rep;
}

}  // namespace nvfp4::server

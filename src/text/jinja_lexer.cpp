// Jinja2 lexer with transformers' settings: newlines normalized to \n, one trailing newline
// dropped (keep_trailing_newline=False), `-` strips all whitespace on its side, trim_blocks drops
// the newline after a block or comment tag, lstrip_blocks drops spaces and tabs between a line
// start and a block or comment tag (`+` disables either). Comments are dropped here.
#include <cctype>
#include <cstring>

#include "text/jinja.h"

namespace nvfp4::jinja {

namespace {

bool is_space_ascii(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Python's str.rstrip() / the regex \s (Unicode whitespace), on UTF-8.
// The code point at s[i] (valid UTF-8) and its length in bytes.
uint32_t cp_at(const std::string& s, size_t i, size_t& len) {
  const auto c = static_cast<unsigned char>(s[i]);
  len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
  uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}
size_t lstrip_len(const std::string& s, size_t from) {
  size_t i = from, len = 0;
  while (i < s.size() && py_isspace(cp_at(s, i, len))) i += len;
  return i - from;
}

size_t rstrip_pos(const std::string& s) {
  size_t n = s.size();
  while (n > 0) {
    size_t b = n - 1;  // start of the last code point
    while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
    size_t len = 0;
    if (!py_isspace(cp_at(s, b, len))) break;
    n = b;
  }
  return n;
}
std::string normalize(const std::string& src) {
  std::string o;
  o.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      o += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      o += src[i];
    }
  }
  if (!o.empty() && o.back() == '\n') o.pop_back();
  return o;
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's unicode-escape decoding of a string literal's body (what jinja applies).
std::string unescape(const std::string& s, int line) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) { o += s[i]; continue; }
    const char c = s[++i];
    switch (c) {
      case '\n': break;
      case '\\': o += '\\'; break;
      case '\'': o += '\''; break;
      case '"': o += '"'; break;
      case 'a': o += '\a'; break;
      case 'b': o += '\b'; break;
      case 'f': o += '\f'; break;
      case 'n': o += '\n'; break;
      case 'r': o += '\r'; break;
      case 't': o += '\t'; break;
      case 'v': o += '\v'; break;
      case 'x': case 'u': case 'U': {
        const int n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int k = 0; k < n; ++k) {
          const int h = i + 1 + k < s.size() ? hexval(s[i + 1 + k]) : -1;
          if (h < 0) fail(line, "string literal: truncated \\" + std::string(1, c) + " escape");
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
          fail(line, "string literal: escape out of the Unicode range");
        append_utf8(o, cp);
        i += n;
        break;
      }
      case 'N': fail(line, "unsupported construct: \\N{...} escape in a string literal");
      default:
        if (c >= '0' && c <= '7') {
          uint32_t cp = 0;
          int k = 0;
          while (k < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7') { cp = cp * 8 + (s[i] - '0'); ++i; ++k; }
          --i;
          append_utf8(o, cp);
        } else {
          o += '\\';
          o += c;
        }
    }
  }
  return o;
}

struct Lexer {
  std::string src;
  size_t pos = 0;
  int line = 1;
  std::vector<Token> out;

  void count_lines(size_t a, size_t b) {
    for (size_t k = a; k < b; ++k) line += src[k] == '\n';
  }

  // Tokens inside a tag until its end; returns the position after the end delimiter (with `-`
  // stripping applied) and whether that end carried `+` or ended in a newline (line_starting).
  void lex_tag(char kind, bool& line_starting) {
    const char* end = kind == '{' ? "}}" : "%}";
    std::vector<char> balance;
    for (;;) {
      while (pos < src.size() && is_space_ascii(src[pos])) { line += src[pos] == '\n'; ++pos; }
      if (pos >= src.size()) fail(line, "unexpected end of template", std::string("'") + end + "'");
      if (balance.empty()) {
        const bool minus = src.compare(pos, 3, std::string("-") + end) == 0;
        const bool plus = kind == '%' && src.compare(pos, 3, std::string("+") + end) == 0;
        if (minus || plus || src.compare(pos, 2, end) == 0) {
          pos += (minus || plus) ? 3 : 2;
          out.push_back({kind == '{' ? Tok::VarEnd : Tok::BlockEnd, "", line});
          const size_t from = pos;
          if (minus) pos += lstrip_len(src, pos);
          else if (kind == '%' && !plus && pos < src.size() && src[pos] == '\n') ++pos;
          count_lines(from, pos);
          line_starting = pos > from && src[pos - 1] == '\n';
          return;
        }
      }
      const char c = src[pos];
      const int at = line;
      if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t e = pos;
        while (e < src.size() && (std::isdigit(static_cast<unsigned char>(src[e])) || src[e] == '_')) ++e;
        bool is_float = false;
        if (e + 1 < src.size() && src[e] == '.' && std::isdigit(static_cast<unsigned char>(src[e + 1]))) {
          is_float = true;
          ++e;
          while (e < src.size() && (std::isdigit(static_cast<unsigned char>(src[e])) || src[e] == '_')) ++e;
        }
        if (e < src.size() && (src[e] == 'e' || src[e] == 'E')) {
          size_t x = e + 1;
          if (x < src.size() && (src[x] == '+' || src[x] == '-')) ++x;
          if (x < src.size() && std::isdigit(static_cast<unsigned char>(src[x]))) {
            is_float = true;
            e = x;
            while (e < src.size() && std::isdigit(static_cast<unsigned char>(src[e]))) ++e;
          }
        }
        std::string num;
        for (size_t k = pos; k < e; ++k)
          if (src[k] != '_') num += src[k];
        out.push_back({is_float ? Tok::Float : Tok::Int, num, at});
        pos = e;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = pos;
        while (e < src.size() && (std::isalnum(static_cast<unsigned char>(src[e])) || src[e] == '_')) ++e;
        out.push_back({Tok::Name, src.substr(pos, e - pos), at});
        pos = e;
      } else if (c == '\'' || c == '"') {
        size_t e = pos + 1;
        while (e < src.size() && src[e] != c) e += src[e] == '\\' ? 2 : 1;
        if (e >= src.size()) fail(at, "unterminated string literal");
        out.push_back({Tok::Str, unescape(src.substr(pos + 1, e - pos - 1), at), at});
        count_lines(pos, e);
        pos = e + 1;
      } else {
        static const char* ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/", "*", "%",
                                    "~", "[", "]", "(", ")", "{", "}", "<", ">", "=", ".", ":",
                                    "|", ",", ";"};
        const char* hit = nullptr;
        for (const char* op : ops)
          if (src.compare(pos, std::strlen(op), op) == 0) { hit = op; break; }
        if (!hit) fail(at, "unexpected character in a tag", "an operator", std::string("'") + c + "'");
        const std::string op = hit;
        if (op == "(" || op == "[" || op == "{") balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
        if (op == ")" || op == "]" || op == "}") {
          if (balance.empty() || balance.back() != op[0]) fail(at, "unbalanced '" + op + "'");
          balance.pop_back();
        }
        out.push_back({Tok::Op, op, at});
        pos += op.size();
      }
    }
  }

  void run() {
    bool line_starting = true;
    for (;;) {
      size_t t = pos;
      for (;;) {
        t = src.find('{', t);
        if (t == std::string::npos || t + 1 >= src.size()) { t = std::string::npos; break; }
        const char n = src[t + 1];
        if (n == '{' || n == '%' || n == '#') break;
        ++t;
      }
      std::string text = src.substr(pos, (t == std::string::npos ? src.size() : t) - pos);
      if (t == std::string::npos) {
        if (!text.empty()) out.push_back({Tok::Text, text, line});
        count_lines(pos, src.size());
        out.push_back({Tok::Eof, "", line});
        return;
      }
      const char kind = src[t + 1];
      const char sign = t + 2 < src.size() ? src[t + 2] : 0;
      if (sign == '-') {
        text.resize(rstrip_pos(text));
      } else if (sign != '+' && kind != '{') {
        const size_t l = text.rfind('\n');
        const size_t lpos = l == std::string::npos ? 0 : l + 1;
        if (lpos > 0 || line_starting) {
          const std::string rest = text.substr(lpos);
          if (!rest.empty() && lstrip_len(rest, 0) == rest.size()) text.resize(lpos);
        }
      }
      if (!text.empty()) out.push_back({Tok::Text, text, line});
      count_lines(pos, t);
      pos = t + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        size_t e = pos;
        for (;;) {
          e = src.find("#}", e);
          if (e == std::string::npos) fail(line, "missing end of comment tag", "'#}'");
          break;
        }
        const bool minus = e > pos && src[e - 1] == '-';
        const bool plus = e > pos && src[e - 1] == '+';
        count_lines(pos, e + 2);
        pos = e + 2;
        const size_t from = pos;
        if (minus) pos += lstrip_len(src, pos);
        else if (!plus && pos < src.size() && src[pos] == '\n') ++pos;
        count_lines(from, pos);
        line_starting = pos > from && src[pos - 1] == '\n';
        continue;
      }
      // {% raw %} is a different lexer state: refused rather than mis-lexed.
      if (kind == '%') {
        size_t k = pos;
        while (k < src.size() && is_space_ascii(src[k])) ++k;
        if (src.compare(k, 3, "raw") == 0 && (k + 3 >= src.size() || !std::isalnum(static_cast<unsigned char>(src[k + 3]))))
          fail(line, "unsupported construct: {% raw %}");
      }
      out.push_back({kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "", line});
      lex_tag(kind == '{' ? '{' : '%', line_starting);
    }
  }
};

}  // namespace

std::vector<Token> lex(const std::string& source) {
  Lexer L;
  L.src = normalize(source);
  L.run();
  return std::move(L.out);
}

}  // namespace nvfp4::jinja

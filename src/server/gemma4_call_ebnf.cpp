// See gemma4_call_ebnf.h.
#include "server/gemma4_call_ebnf.h"

#include "server/ebnf_literal.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

namespace nvfp4::server {

namespace {

using OJson = nlohmann::ordered_json;

// The syntax's generic rules (any value). null is also "None": the template writes a null
// argument as Python prints it, and the parser reads both.
constexpr const char* kValueEbnf = R"(
members ::= member ( "," member )*
member ::= key ":" value
key ::= [A-Za-z_] [A-Za-z0-9_.\-]*
value ::= string | number | "true" | "false" | null | object | array
object ::= "{" members? "}"
array ::= "[" ( value ( "," value )* )? "]"
string ::= "<|\"|>" [^<]* "<|\"|>"
number ::= "-"? ( "0" | [1-9] [0-9]{0,17} ) ( "." [0-9]{1,18} )?
integer ::= "-"? ( "0" | [1-9] [0-9]{0,17} )
boolean ::= "true" | "false"
null ::= "null" | "None"
)";

// Rules written for one call's schema, each named with the tool's prefix.
struct Rules {
  std::string prefix, text;
  int next = 0;
  std::string add(const std::string& body) {
    const std::string name = prefix + std::to_string(next++);
    text += name + " ::= " + body + "\n";
    return name;
  }
};

// A JSON value (enum / const member) in the call syntax, or empty when the syntax cannot hold it
// exactly (a string with '<').
std::string literal_value(const OJson& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find('<') != std::string::npos) return "";
    return ebnf_literal("<|\"|>" + s + "<|\"|>");
  }
  if (v.is_null()) return "null";
  if (v.is_number() || v.is_boolean()) return ebnf_literal(v.dump());
  return "";
}

std::string value_rule(const OJson& schema, Rules& r, int depth);

// An object with listed properties: "{" its members in dictsort order "}", each required one
// present, each optional one present or not, commas between those present.
std::string object_rule(const OJson& props, const OJson* required, Rules& r, int depth) {
  std::vector<std::pair<std::string, const OJson*>> keys;
  for (auto it = props.begin(); it != props.end(); ++it) keys.push_back({it.key(), &it.value()});
  const auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) { return lower(a.first) < lower(b.first); });
  const auto is_required = [&](const std::string& k) {
    if (!required || !required->is_array()) return false;
    for (const OJson& x : *required)
      if (x.is_string() && x.get_ref<const std::string&>() == k) return true;
    return false;
  };
  // first[i]: members i.. with none written yet; after[i]: members i.. after one was written
  // (rule names; empty past the last member).
  const size_t n = keys.size();
  std::vector<std::string> first(n + 1), after(n + 1);
  for (size_t i = n; i-- > 0;) {
    const std::string m = ebnf_literal(keys[i].first + ":") + " " + value_rule(*keys[i].second, r, depth + 1);
    const std::string& A = after[i + 1];
    const std::string& F = first[i + 1];
    const std::string rest = A.empty() ? "" : " " + A;
    if (is_required(keys[i].first)) {
      after[i] = r.add("\",\" " + m + rest);
      first[i] = r.add(m + rest);
    } else {
      after[i] = r.add("( \",\" " + m + " )?" + rest);
      first[i] = F.empty() ? r.add("( " + m + " )?") : r.add(m + rest + " | " + F);
    }
  }
  return n == 0 ? r.add("\"{}\"") : r.add("\"{\" " + first[0] + " \"}\"");
}

std::string value_rule(const OJson& schema, Rules& r, int depth) {
  if (!schema.is_object() || depth > 8) return "value";
  if (const auto c = schema.find("const"); c != schema.end()) {
    const std::string l = literal_value(*c);
    return l.empty() ? "value" : r.add(l);
  }
  if (const auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty()) {
    std::string alts;
    for (const OJson& v : *e) {
      const std::string l = literal_value(v);
      if (l.empty()) return "value";
      alts += (alts.empty() ? "" : " | ") + l;
    }
    return r.add(alts);
  }
  if (const auto a = schema.find("anyOf"); a != schema.end() && a->is_array() && !a->empty()) {
    std::string alts;
    for (const OJson& s : *a) alts += (alts.empty() ? "" : " | ") + value_rule(s, r, depth + 1);
    return r.add(alts);
  }
  const auto t = schema.find("type");
  if (t == schema.end()) return "value";
  if (t->is_array()) {
    std::string alts;
    for (const OJson& one : *t) {
      OJson s = schema;
      s["type"] = one;
      alts += (alts.empty() ? "" : " | ") + value_rule(s, r, depth + 1);
    }
    return alts.empty() ? "value" : r.add(alts);
  }
  if (!t->is_string()) return "value";
  const std::string& type = t->get_ref<const std::string&>();
  if (type == "string") {
    const std::string chars = ebnf_bounded_chars(schema);
    return chars.empty() ? "string" : r.add(ebnf_literal("<|\"|>") + " " + chars + " " + ebnf_literal("<|\"|>"));
  }
  if (type == "integer") return "integer";
  if (type == "number") return "number";
  if (type == "boolean") return "boolean";
  if (type == "null") return "null";
  if (type == "array") {
    const auto items = schema.find("items");
    const std::string item = items == schema.end() ? "value" : value_rule(*items, r, depth + 1);
    return r.add("\"[\" ( " + item + " ( \",\" " + item + " )* )? \"]\"");
  }
  if (type == "object") {
    const auto props = schema.find("properties");
    if (props == schema.end() || !props->is_object()) return "object";
    const auto req = schema.find("required");
    return object_rule(*props, req == schema.end() ? nullptr : &*req, r, depth);
  }
  return "value";
}

}  // namespace

std::string gemma4_call_ebnf(const OJson& tools, const std::string& only) {
  std::string calls, rules;
  for (size_t i = 0; i < tools.size(); ++i) {
    const OJson& fn = tools[i]["function"];
    const std::string& name = fn["name"].get_ref<const std::string&>();
    if (!only.empty() && name != only) continue;
    Rules r{"t" + std::to_string(i) + "_", "", 0};
    std::string args = "\"{\" members? \"}\"";
    // Parameters of type object with listed properties: their own rule; else any arguments.
    if (const auto p = fn.find("parameters"); p != fn.end() && p->is_object() && p->value("type", OJson()) == "object" &&
                                              p->contains("properties") && (*p)["properties"].is_object()) {
      const auto req = p->find("required");
      args = object_rule((*p)["properties"], req == p->end() ? nullptr : &*req, r, 0);
    }
    calls += (calls.empty() ? "" : " | ") + ebnf_literal(name) + " " + args;
    rules += r.text;
  }
  if (calls.empty()) return "";
  return "root ::= \"<|tool_call>call:\" ( " + calls + " ) \"<tool_call|>\"\n" + rules + kValueEbnf;
}

}  // namespace nvfp4::server

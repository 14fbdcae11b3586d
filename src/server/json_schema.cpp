// JSON Schema -> Grammar (see json_schema.h).
#include "server/json_schema.h"

#include <map>
#include <set>

#include "server/api_error.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

constexpr int kMaxDepth = 64;       // nesting of schemas inside one another (not through $ref)
constexpr size_t kMaxNodes = 20000; // schema nodes of one grammar
constexpr size_t kMaxSet = 64;      // properties of an object, values of an enum

[[noreturn]] void refuse(const std::string& path, const std::string& msg) {
  throw ApiError(400, "'" + path + "' " + msg, path, "invalid_value");
}

std::string shown(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f && c != '"') ? static_cast<char>(c) : '?';
  return out;
}

std::string compact(const OJson& v) { return v.dump(-1, ' ', false, OJson::error_handler_t::strict); }

uint16_t type_bit(const std::string& t, const std::string& path) {
  if (t == "object") return kTypeObject;
  if (t == "array") return kTypeArray;
  if (t == "string") return kTypeString;
  if (t == "number") return kTypeNumber;
  if (t == "integer") return kTypeInteger;
  if (t == "boolean") return kTypeBoolean;
  if (t == "null") return kTypeNull;
  refuse(path, "must be object, array, string, number, integer, boolean or null, found \"" + shown(t) + "\"");
}

// The types a JSON value is an instance of (an integral float is an integer, as JSON Schema says).
uint16_t types_of(const OJson& v) {
  switch (v.type()) {
    case OJson::value_t::object: return kTypeObject;
    case OJson::value_t::array: return kTypeArray;
    case OJson::value_t::string: return kTypeString;
    case OJson::value_t::boolean: return kTypeBoolean;
    case OJson::value_t::null: return kTypeNull;
    case OJson::value_t::number_integer:
    case OJson::value_t::number_unsigned: return kTypeInteger | kTypeNumber;
    case OJson::value_t::number_float: {
      const double d = v.get<double>();
      return static_cast<uint16_t>(kTypeNumber | (d == static_cast<double>(static_cast<int64_t>(d)) ? kTypeInteger : 0));
    }
    default: return 0;
  }
}

int64_t count(const OJson& v, const std::string& path) {
  if (!v.is_number_integer() && !v.is_number_unsigned()) refuse(path, "must be a non-negative integer");
  if (v.is_number_integer() && v.get<int64_t>() < 0) refuse(path, "must be a non-negative integer");
  const uint64_t u = v.get<uint64_t>();
  return u > (uint64_t{1} << 40) ? int64_t{1} << 40 : static_cast<int64_t>(u);
}

const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {"title",   "description", "default",  "examples",  "$schema",
                                          "$id",     "$comment",    "deprecated", "readOnly", "writeOnly",
                                          "$defs",   "definitions"};
  return k;
}

class Compiler {
 public:
  Compiler(Grammar& g, const OJson& doc, std::string doc_path) : g_(g), doc_(doc), doc_path_(std::move(doc_path)) {}

  int32_t node(const OJson& s, const std::string& path, int depth) {
    if (depth > kMaxDepth) refuse(path, "nests schemas deeper than " + std::to_string(kMaxDepth));
    if (g_.nodes.size() >= kMaxNodes) refuse(path, "makes the schema larger than " + std::to_string(kMaxNodes) + " nodes");
    if (s.is_boolean()) {
      if (!s.get<bool>()) refuse(path, "is the schema false, which no value satisfies");
      return kAnyNode;
    }
    if (!s.is_object()) refuse(path, "must be a JSON schema (an object), found " + std::string(s.type_name()));
    if (const auto it = s.find("$ref"); it != s.end()) return ref(s, *it, path);
    SchemaNode n;
    for (const auto& [k, v] : s.items()) {
      const std::string kp = path + "." + k;
      if (annotations().count(k)) continue;
      if (k == "type") {
        n.types = 0;
        if (v.is_string()) {
          n.types = type_bit(v.get<std::string>(), kp);
        } else if (v.is_array() && !v.empty()) {
          for (size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_string()) refuse(kp + "[" + std::to_string(i) + "]", "must be a type name");
            n.types |= type_bit(v[i].get<std::string>(), kp + "[" + std::to_string(i) + "]");
          }
        } else {
          refuse(kp, "must be a type name or a non-empty array of them");
        }
        if (n.types & kTypeNumber) n.types |= kTypeInteger;
      } else if (k == "enum" || k == "const") {
        if (k == "enum" && (!v.is_array() || v.empty())) refuse(kp, "must be a non-empty array");
        if (n.has_literals) refuse(kp, "cannot stand beside both enum and const");
        n.has_literals = true;
        if (k == "const") {
          n.literals.push_back(compact(v));
        } else {
          if (v.size() > kMaxSet) refuse(kp, "may hold at most " + std::to_string(kMaxSet) + " values (this server's bound)");
          for (const auto& e : v) n.literals.push_back(compact(e));
        }
      } else if (k == "properties") {
        if (!v.is_object()) refuse(kp, "must be an object of schemas");
        if (v.size() > kMaxSet) refuse(kp, "may hold at most " + std::to_string(kMaxSet) + " properties (this server's bound)");
        for (const auto& [name, ps] : v.items()) {
          n.prop_names.push_back(name);
          n.prop_nodes.push_back(node(ps, kp + "." + name, depth + 1));
        }
      } else if (k == "required") {
        if (!v.is_array()) refuse(kp, "must be an array of property names");
      } else if (k == "additionalProperties") {
        n.additional = v.is_boolean() ? (v.get<bool>() ? kAnyNode : -1) : node(v, kp, depth + 1);
      } else if (k == "items") {
        if (v.is_array()) refuse(kp, "as an array (tuple items) is not supported; give one schema");
        n.items = node(v, kp, depth + 1);
      } else if (k == "minItems") {
        n.min_items = count(v, kp);
      } else if (k == "maxItems") {
        n.max_items = count(v, kp);
      } else if (k == "minLength") {
        n.min_length = count(v, kp);
      } else if (k == "maxLength") {
        n.max_length = count(v, kp);
      } else if (k == "anyOf") {
        if (!v.is_array() || v.empty()) refuse(kp, "must be a non-empty array of schemas");
        for (size_t i = 0; i < v.size(); ++i) n.any_of.push_back(node(v[i], kp + "[" + std::to_string(i) + "]", depth + 1));
      } else {
        refuse(kp, "is not supported in constrained output (supported: type, properties, required, "
                   "additionalProperties, items, minItems, maxItems, minLength, maxLength, enum, const, anyOf, $ref)");
      }
    }
    if (const auto it = s.find("required"); it != s.end()) {
      for (size_t i = 0; i < it->size(); ++i) {
        const std::string rp = path + ".required[" + std::to_string(i) + "]";
        if (!(*it)[i].is_string()) refuse(rp, "must be a property name");
        const std::string& r = (*it)[i].get_ref<const std::string&>();
        size_t p = 0;
        while (p < n.prop_names.size() && n.prop_names[p] != r) ++p;
        if (p == n.prop_names.size())
          refuse(rp, "names \"" + shown(r) + "\", which 'properties' does not define (not supported)");
        n.required |= uint64_t{1} << p;
      }
    }
    if (!n.any_of.empty() && s.size() != 1) {
      for (const auto& [k, v] : s.items())
        if (k != "anyOf" && !annotations().count(k))
          refuse(path + "." + k, "beside anyOf is not supported; move it into each branch");
    }
    if (n.max_items >= 0 && n.min_items > n.max_items) refuse(path + ".minItems", "is larger than maxItems");
    if (n.max_length >= 0 && n.min_length > n.max_length) refuse(path + ".minLength", "is larger than maxLength");
    if (n.has_literals) {
      // Only the values the type admits stay (the rest could never validate).
      std::vector<std::string> kept;
      for (const std::string& l : n.literals)
        if (types_of(OJson::parse(l)) & n.types) kept.push_back(l);
      if (kept.empty()) refuse(path + (s.contains("enum") ? ".enum" : ".const"), "has no value of the schema's type");
      n.literals = std::move(kept);
    }
    if (!n.any_of.empty()) n.types = 0;
    return g_.add(std::move(n));
  }

 private:
  int32_t ref(const OJson& s, const OJson& r, const std::string& path) {
    const std::string rp = path + ".$ref";
    for (const auto& [k, v] : s.items())
      if (k != "$ref" && !annotations().count(k)) refuse(path + "." + k, "beside $ref is not supported");
    if (!r.is_string()) refuse(rp, "must be a string");
    const std::string& target = r.get_ref<const std::string&>();
    if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
    std::string name, where;
    for (const char* pre : {"#/$defs/", "#/definitions/"})
      if (target.rfind(pre, 0) == 0) {
        where = std::string(pre).substr(2, std::string(pre).size() - 3);
        name = target.substr(std::string(pre).size());
      }
    if (name.empty() || name.find('/') != std::string::npos || name.find('~') != std::string::npos)
      refuse(rp, "must be \"#/$defs/NAME\" or \"#/definitions/NAME\" (a local definition), found \"" + shown(target) + "\"");
    const auto defs = doc_.find(where);
    if (defs == doc_.end() || !defs->is_object() || !defs->contains(name))
      refuse(rp, "names \"" + shown(target) + "\", which the schema does not define");
    // Reserved first: a definition may refer to itself (through an object's property).
    const int32_t id = g_.add(SchemaNode{});
    refs_[target] = id;
    const int32_t body = node((*defs)[name], doc_path_ + "." + where + "." + name, 0);
    SchemaNode alias;
    alias.types = 0;
    alias.any_of = {body};
    g_.nodes[static_cast<size_t>(id)] = std::move(alias);
    return id;
  }

  Grammar& g_;
  const OJson& doc_;
  std::string doc_path_;
  std::map<std::string, int32_t> refs_;
};

}  // namespace

Grammar::Grammar() {
  nodes.emplace_back();  // any value
  SchemaNode b;
  b.has_literals = true;
  b.literals = {"true", "false"};
  b.types = kTypeBoolean;
  nodes.push_back(b);
  SchemaNode z;
  z.has_literals = true;
  z.literals = {"null"};
  z.types = kTypeNull;
  nodes.push_back(z);
}

int32_t Grammar::add(SchemaNode n) {
  nodes.push_back(std::move(n));
  return static_cast<int32_t>(nodes.size() - 1);
}

int32_t Grammar::literal(const std::string& text) {
  SchemaNode n;
  n.has_literals = true;
  n.literals = {text};
  return add(std::move(n));
}

int32_t compile_schema(Grammar& g, const OJson& schema, const OJson& doc, const std::string& path) {
  Compiler c(g, doc, path);
  return c.node(schema, path, 0);
}

Grammar json_object_grammar() {
  Grammar g;
  SchemaNode n;
  n.types = kTypeObject;
  g.root = g.add(std::move(n));
  return g;
}

Grammar json_schema_grammar(const OJson& schema, const std::string& path) {
  Grammar g;
  g.root = compile_schema(g, schema, schema, path);
  return g;
}

}  // namespace nvfp4::server

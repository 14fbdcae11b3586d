// Requests' output constraints (see output_grammar.h).
#include "server/output_grammar.h"

#include "server/api_error.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& name, const std::string& msg, const char* code = "invalid_value") {
  throw ApiError(400, "'" + name + "' " + msg, name, code);
}

const OJson* field(const OJson& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string quoted(const std::string& s) { return OJson(s).dump(-1, ' ', false, OJson::error_handler_t::replace); }

}  // namespace

std::shared_ptr<const Grammar> response_format_grammar(const OJson& rf, const std::string& name, bool flat) {
  if (!rf.is_object()) bad(name, "must be an object, found " + std::string(rf.type_name()), "invalid_type");
  const OJson* type = field(rf, "type");
  if (!type) bad(name + ".type", "is required", "missing_field");
  if (!type->is_string()) bad(name + ".type", "must be a string", "invalid_type");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return nullptr;
  if (t == "json_object") return std::make_shared<const Grammar>(json_object_grammar());
  if (t != "json_schema") bad(name + ".type", "must be \"text\", \"json_object\" or \"json_schema\"");
  const std::string js = flat ? name : name + ".json_schema";
  const OJson* spec = flat ? &rf : field(rf, "json_schema");
  if (!spec) bad(js, "is required when type is \"json_schema\"", "missing_field");
  if (!spec->is_object()) bad(js, "must be an object", "invalid_type");
  const OJson* n = field(*spec, "name");
  if (!n) bad(js + ".name", "is required", "missing_field");
  if (!n->is_string() || n->get_ref<const std::string&>().empty() || n->get_ref<const std::string&>().size() > 64)
    bad(js + ".name", "must be a string of 1 to 64 characters");
  if (const OJson* s = field(*spec, "strict"); s && !s->is_boolean()) bad(js + ".strict", "must be a boolean", "invalid_type");
  const OJson* schema = field(*spec, "schema");
  if (!schema) return std::make_shared<const Grammar>(json_object_grammar());  // OpenAI: any object then
  return std::make_shared<const Grammar>(json_schema_grammar(*schema, js + ".schema"));
}

std::shared_ptr<const Grammar> body_response_format(const std::string& body) {
  const OJson j = OJson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw ApiError(400, "the request body is not valid JSON", "", "invalid_json");
  const OJson* rf = field(j, "response_format");
  return rf ? response_format_grammar(*rf, "response_format", false) : nullptr;
}

std::shared_ptr<const Grammar> tool_call_grammar(ToolFormat f, const std::string& tools_json, const std::string& only) {
  const char* args_key = "arguments";
  std::string prefix, suffix;
  switch (f) {
    case ToolFormat::Hermes:
      prefix = "<tool_call>\n";
      suffix = "\n</tool_call>";
      break;
    case ToolFormat::Llama3: args_key = "parameters"; break;
    case ToolFormat::Mistral:
      prefix = "[TOOL_CALLS][";
      suffix = "]";
      break;
    default: return nullptr;
  }
  const OJson tools = OJson::parse(tools_json, nullptr, false);
  if (!tools.is_array()) return nullptr;
  auto g = std::make_shared<Grammar>();
  SchemaNode any_call;
  any_call.types = 0;
  for (size_t i = 0; i < tools.size(); ++i) {
    const OJson& fn = tools[i]["function"];
    const std::string& name = fn["name"].get_ref<const std::string&>();
    if (!only.empty() && name != only) continue;
    const std::string pp = "tools[" + std::to_string(i) + "].function.parameters";
    int32_t args = -1;
    if (const OJson* p = field(fn, "parameters")) {
      args = compile_schema(*g, *p, *p, pp);
      SchemaNode& a = g->nodes[static_cast<size_t>(args)];
      if (args == kAnyNode || (a.any_of.empty() && !a.has_literals)) {
        if (args == kAnyNode) {
          SchemaNode obj;
          obj.types = kTypeObject;
          args = g->add(std::move(obj));
        } else if (!(a.types & kTypeObject)) {
          bad(pp + ".type", "must admit an object (a call's arguments are one)");
        } else {
          a.types = kTypeObject;
        }
      }
    } else {
      SchemaNode obj;
      obj.types = kTypeObject;
      args = g->add(std::move(obj));
    }
    SchemaNode call;
    call.types = kTypeObject;
    call.prop_names = {"name", args_key};
    call.prop_nodes = {g->literal(quoted(name)), args};
    call.required = 3;
    call.additional = -1;
    any_call.any_of.push_back(g->add(std::move(call)));
  }
  if (any_call.any_of.empty()) return nullptr;
  g->root = any_call.any_of.size() == 1 ? any_call.any_of[0] : g->add(std::move(any_call));
  if (!prefix.empty()) g->prefix = g->literal(prefix);
  if (!suffix.empty()) g->suffix = g->literal(suffix);
  return g;
}

}  // namespace nvfp4::server

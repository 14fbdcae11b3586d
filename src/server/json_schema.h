// A JSON Schema compiled into the graph that JsonChecker (json_checker.h) walks: the subset that
// coding agents send (OpenAI's strict structured outputs): type (one or a list of object, array,
// string, number, integer, boolean, null), properties, required, additionalProperties (false, true
// or a schema), items, minItems/maxItems, minLength/maxLength, enum, const, anyOf, local $ref into
// $defs/definitions (recursion allowed), and the annotations (title, description,
// default, examples, $schema, $id, $comment, deprecated, readOnly, writeOnly), which constrain
// nothing. Anything else (pattern, format, minimum, oneOf, allOf, not, if, ...) is refused with
// ApiError 400 naming its path, e.g. "response_format.json_schema.schema.properties.x.pattern":
// a constraint we cannot enforce is not silently dropped.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nvfp4::server {

enum TypeBits : uint16_t {
  kTypeObject = 1,
  kTypeArray = 2,
  kTypeString = 4,
  kTypeNumber = 8,
  kTypeInteger = 16,
  kTypeBoolean = 32,
  kTypeNull = 64,
  kTypeAll = 127,
};

// One schema. A node with any_of is the union of its branches (its other fields unused); one
// with literals admits exactly those JSON texts.
struct SchemaNode {
  uint16_t types = kTypeAll;
  bool has_literals = false;
  std::vector<std::string> literals;  // enum/const values, compact JSON text (at most 64)
  std::vector<int32_t> any_of;
  // Objects: properties in the schema's order (at most 64), those required (a bit each), the
  // schema of other keys' values (-1: no other key).
  std::vector<std::string> prop_names;
  std::vector<int32_t> prop_nodes;
  uint64_t required = 0;
  int32_t additional = 0;
  // Arrays: the items' schema; the count's bounds (max -1: none).
  int32_t items = 0;
  int64_t min_items = 0, max_items = -1;
  // Strings: the length's bounds in code points (max -1: none).
  int64_t min_length = 0, max_length = -1;
};

// What a constrained generation must write: `prefix`, then one JSON value of `root`, then
// `suffix` (a tool call's markers around its JSON; both empty for response_format).
struct Grammar {
  std::vector<SchemaNode> nodes;  // [0]: any value; [1]: true/false; [2]: null; then the schema's
  int32_t root = 0;
  int32_t prefix = -1, suffix = -1;  // nodes of one literal each (-1: none)

  Grammar();
  int32_t add(SchemaNode n);
  // A node that admits exactly `text` (the markers).
  int32_t literal(const std::string& text);
};

constexpr int32_t kAnyNode = 0, kBoolNode = 1, kNullNode = 2;

// The node of `schema` in g (its $defs resolved against `doc`, the document's root). `path` is
// the schema's field path for errors. Throws ApiError(400).
int32_t compile_schema(Grammar& g, const nlohmann::ordered_json& schema, const nlohmann::ordered_json& doc,
                       const std::string& path);

// response_format {"type": "json_object"}: any JSON object.
Grammar json_object_grammar();
// A whole schema document: its root node (the grammar's).
Grammar json_schema_grammar(const nlohmann::ordered_json& schema, const std::string& path);

}  // namespace nvfp4::server

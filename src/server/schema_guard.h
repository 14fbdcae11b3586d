// What xgrammar's JSON-schema converter would drop without a word, refused before it sees the
// schema: a constraint we cannot enforce is a 400 naming its path, never silently ignored.
// xgrammar 0.2.8 logs a warning and drops: not, if/then/else, dependentRequired,
// dependentSchemas; allOf with more than one schema (it admits any value then); multipleOf on
// numbers; minLength/maxLength beside a pattern or a format; oneOf whose branches it cannot
// prove disjoint (it enforces anyOf then). It ignores what it does not know (contains,
// uniqueItems, formats outside its list, ...). So the guard admits keywords by a list: those
// xgrammar enforces, and the annotations, which constrain nothing.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace nvfp4::server {

// Throws ApiError(400) naming e.g. "response_format.json_schema.schema.properties.x.not".
void check_schema_supported(const nlohmann::ordered_json& schema, const std::string& path);

// The schema with the formats whose xgrammar regex admits invalid values written as exact
// patterns instead (measured by tools/test_serve_grammar.py against PyPI jsonschema): "date"
// (xgrammar admits 2021-02-31; ours knows each month's days and leap years, years 1000-9999),
// "date-time" and "time" (xgrammar lets the fraction of a second run without end; ours takes
// 1 to 6 digits, no leap second), "ipv4" (xgrammar admits 91.000.40.4; ours no leading zeros).
// And a string's minLength/maxLength (up to 128) as the pattern of the same language, whose
// masks xgrammar caches (schema_guard.cpp, length_pattern).
nlohmann::ordered_json exact_formats(const nlohmann::ordered_json& schema);

}  // namespace nvfp4::server

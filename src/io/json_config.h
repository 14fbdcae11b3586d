// config.json as Python's json module writes it: besides JSON, the bare words Infinity, -Infinity
// and NaN (json.dumps' allow_nan, on by default). Nemotron-H's config carries
// "time_step_limit": [0.0, Infinity]. Only config.json is read this way: HTTP request bodies and
// every other JSON file stay strict JSON (nlohmann::json::parse refuses the bare words).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace nvfp4 {

// Parses `text`; the bare words outside strings become the float values inf, -inf and NaN, and
// so does transformers 5's spelling of them, an object {"__float__": "Infinity"} (or "-Infinity",
// "NaN").
// Throws nlohmann::json::exception as json::parse does for anything else that is not JSON, and
// nvfp4::Error naming `file` for a string that spells the pass's own marker ("\u0000nvfp4:NaN").
nlohmann::json parse_config_json(const std::string& text, const std::string& file);

// The JSON object in config.json file `file` as parse_config_json reads it; nvfp4::Error naming the
// file (`what`: whose config it is, for the message) when it is missing, unreadable, not JSON or
// not an object.
nlohmann::json read_config_json_file(const std::string& file, const std::string& what);

// `j` as json.dumps(indent=indent) writes it: non-finite numbers as the bare words Infinity,
// -Infinity and NaN (nlohmann's dump writes null, which transformers and this reader refuse).
std::string dump_config_json(const nlohmann::json& j, int indent);

}  // namespace nvfp4

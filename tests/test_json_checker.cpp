// The constrained-output checker (server/json_checker.h) over valid and invalid documents: every
// prefix of a valid document is taken and the whole one ends it; a wrong byte is refused at the
// first place it makes the text invalid; schemas it cannot enforce are refused naming the field.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/api_error.h"
#include "server/json_checker.h"
#include "server/json_schema.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

std::shared_ptr<const Grammar> schema(const std::string& s) {
  return std::make_shared<const Grammar>(json_schema_grammar(OJson::parse(s), "schema"));
}
std::shared_ptr<const Grammar> object_grammar() { return std::make_shared<const Grammar>(json_object_grammar()); }

// Every byte of doc is taken, the text is accepting only at the end, and then it is done (or at
// least accepting, for a number at the root).
void expect_valid(const std::shared_ptr<const Grammar>& g, const std::string& doc, bool ends = true) {
  JsonChecker c(g);
  for (size_t i = 0; i < doc.size(); ++i) {
    ASSERT_FALSE(c.done()) << "done before byte " << i << " of " << doc;
    ASSERT_TRUE(c.feed(static_cast<uint8_t>(doc[i]))) << "refused byte " << i << " ('" << doc[i] << "') of " << doc;
  }
  EXPECT_TRUE(c.accepting()) << doc;
  EXPECT_EQ(c.done(), ends) << doc;
}

// The first `good` bytes are taken and byte `good` is refused.
void expect_refused_at(const std::shared_ptr<const Grammar>& g, const std::string& doc, size_t good) {
  JsonChecker c(g);
  for (size_t i = 0; i < good; ++i)
    ASSERT_TRUE(c.feed(static_cast<uint8_t>(doc[i]))) << "refused byte " << i << " of " << doc;
  EXPECT_FALSE(c.feed(static_cast<uint8_t>(doc[good]))) << "took byte " << good << " ('" << doc[good] << "') of " << doc;
}

// A document that is whole too early (or never) is not accepting.
void expect_unfinished(const std::shared_ptr<const Grammar>& g, const std::string& doc) {
  JsonChecker c(g);
  ASSERT_TRUE(c.feed(doc)) << doc;
  EXPECT_FALSE(c.accepting()) << doc;
  EXPECT_FALSE(c.done()) << doc;
}

TEST(JsonChecker, JsonObjectTakesEveryPrefixOfValidObjects) {
  const auto g = object_grammar();
  for (const char* d : {R"({})", R"({"a":1})", " {\n  \"a\": [1, -2.5e+3, 0, true, false, null, \"x\"],\n  \"b\": {\"c\":{ }}\n}",
                        R"({"s":"esc \" \\ \/ \b \f \n \r \t \u00e9 \u20AC","u":"é€😀"})", R"({"n":-0.0,"m":12E-7})",
                        "{\n  \"a\": [\n    {}\n  ]\n}", R"({"a":[[],[[]]]})"})
    expect_valid(g, d);
}

TEST(JsonChecker, JsonObjectRefusesInvalidBytes) {
  const auto g = object_grammar();
  expect_refused_at(g, "[1]", 0);            // the root is an object
  expect_refused_at(g, "\"a\"", 0);
  expect_refused_at(g, R"({"a"1})", 4);      // no colon
  expect_refused_at(g, R"({"a":1,})", 7);    // trailing comma
  expect_refused_at(g, R"({"a":01})", 6);    // leading zero
  expect_refused_at(g, R"({"a":1.})", 7);    // no fraction digit
  expect_refused_at(g, R"({"a":tru})", 8);
  expect_refused_at(g, R"({"a":"\x"})", 7);  // unknown escape
  expect_refused_at(g, "{\"a\":\"\x01\"}", 6);     // raw control byte
  expect_refused_at(g, "{\"a\":\"\xC0\x80\"}", 6); // overlong UTF-8
  expect_refused_at(g, "{\"a\":\"\xED\xA0\x80\"}", 7);  // a surrogate in UTF-8
  expect_refused_at(g, R"({"a":"\ud800"})", 9);        // a surrogate escape
  expect_refused_at(g, R"({"a":1}})", 7);    // nothing after the document
  expect_refused_at(g, R"({"a":1} )", 7);
  expect_refused_at(g, R"({'a':1})", 1);
  expect_unfinished(g, R"({"a":[1,2)");
}

TEST(JsonChecker, WhitespaceRunsAreBounded) {
  const auto g = object_grammar();
  JsonChecker c(g);
  ASSERT_TRUE(c.feed('{'));
  for (int i = 0; i < JsonChecker::kMaxSpaces; ++i) ASSERT_TRUE(c.feed(' '));
  EXPECT_FALSE(c.feed(' '));
  expect_refused_at(g, "{\n\n", 2);           // one newline a run
  expect_refused_at(g, "{ \n", 2);             // at its start
  expect_refused_at(g, "{\r\n", 1);
  expect_refused_at(g, R"({"a" :1})", 4);      // nothing before a colon
  expect_refused_at(g, R"({"a":1 ,"b":2})", 7);  // spaces after a value only before the end
  expect_refused_at(g, R"({"a":[1 ,2]})", 8);
  expect_valid(g, "{\"a\": [1, 2\n  ]\n}");
  const auto req = std::make_shared<const Grammar>(json_schema_grammar(
      OJson::parse(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["b"]})"), "s"));
  expect_refused_at(req, R"({"a":1 )", 6);     // '}' may not come yet: neither may the space
}

TEST(JsonChecker, SchemaTypesPropertiesAndRequired) {
  const auto g = schema(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
      "tags":{"type":"array","items":{"type":"string"}},"ok":{"type":"boolean"},"none":{"type":"null"},
      "score":{"type":"number"}},"required":["name","age"],"additionalProperties":false})");
  expect_valid(g, R"({"name":"Ann","age":30})");
  expect_valid(g, R"({"age":30,"name":"Ann","tags":["a","b"],"ok":true,"none":null,"score":-1.5e3})");
  expect_valid(g, R"({ "name": "x",  "age": -0 })");
  expect_refused_at(g, R"({"name":"Ann"})", 13);            // age is required
  expect_refused_at(g, R"({"name":1})", 8);                 // name is a string
  expect_refused_at(g, R"({"age":1.5})", 8);                // an integer has no fraction
  expect_refused_at(g, R"({"nam":"x"})", 5);                // no such key
  expect_refused_at(g, R"({"x":1})", 2);                    // additionalProperties false
  expect_refused_at(g, R"({"name":"a","name":"b"})", 14);   // a key at most once ("n" may begin "none")
  expect_refused_at(g, R"({"ok":1})", 6);
  expect_refused_at(g, R"({"tags":[1]})", 9);
  expect_refused_at(g, R"({"na\u006de":"x"})", 4);          // keys take no escapes
}

TEST(JsonChecker, AdditionalPropertiesAndAllKeysSeen) {
  const auto open = schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
  expect_valid(open, R"({"a":1,"ab":"x","b":"y"})");
  expect_refused_at(open, R"({"b":1})", 5);       // another key's value is a string
  expect_refused_at(open, R"({"a":1,"a":2})", 9);  // "a" again
  const auto closed = schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false})");
  expect_valid(closed, R"({})");
  expect_valid(closed, R"({"a":1})");
  expect_refused_at(closed, R"({"a":1,)", 6);     // no key is left for a comma
}

TEST(JsonChecker, EnumConstAndLiterals) {
  const auto g = schema(R"({"type":"object","properties":{"unit":{"enum":["celsius","fahrenheit"]},
      "v":{"const":3},"n":{"enum":[1,12,"x",null,true]}},"required":["unit"],"additionalProperties":false})");
  expect_valid(g, R"({"unit":"celsius"})");
  expect_valid(g, R"({"unit":"fahrenheit","v":3,"n":12})");
  expect_valid(g, R"({"n":1,"unit":"celsius"})");
  expect_valid(g, R"({"n":null,"unit":"celsius"})");
  expect_refused_at(g, R"({"unit":"kelvin"})", 9);
  expect_refused_at(g, R"({"unit":"celsiu"})", 15);
  expect_refused_at(g, R"({"v":4})", 5);
  expect_refused_at(g, R"({"n":2})", 5);
  expect_refused_at(g, R"({"n":false})", 5);
  // Values the type excludes are dropped; none left is refused.
  const auto s = schema(R"({"type":"string","enum":["a",1]})");
  expect_valid(s, R"("a")");
  expect_refused_at(s, "1", 0);
  EXPECT_THROW(schema(R"({"type":"string","enum":[1,2]})"), ApiError);
}

TEST(JsonChecker, AnyOfNullableAndNestedObjects) {
  const auto g = schema(R"({"type":"object","properties":{
      "who":{"anyOf":[{"type":"object","properties":{"kind":{"const":"person"},"name":{"type":"string"}},
                       "required":["kind","name"],"additionalProperties":false},
                      {"type":"object","properties":{"kind":{"const":"robot"},"id":{"type":"integer"}},
                       "required":["kind","id"],"additionalProperties":false}]},
      "note":{"type":["string","null"]}},"required":["who","note"],"additionalProperties":false})");
  expect_valid(g, R"({"who":{"kind":"person","name":"Ann"},"note":null})");
  expect_valid(g, R"({"who":{"kind":"robot","id":7},"note":"hi"})");
  expect_valid(g, R"({"note":"x","who":{"id":7,"kind":"robot"}})");
  expect_refused_at(g, R"({"who":{"kind":"robot","name":"x"},"note":null})", 24);
  expect_refused_at(g, R"({"who":{"kind":"person","id":1},"note":null})", 25);
  expect_refused_at(g, R"({"who":{},"note":null})", 8);
  expect_refused_at(g, R"({"who":{"kind":"robot","id":1},"note":1})", 38);
}

TEST(JsonChecker, LengthsAndCounts) {
  const auto g = schema(R"({"type":"array","items":{"type":"string","minLength":1,"maxLength":3},"minItems":1,"maxItems":2})");
  expect_valid(g, R"(["a"])");
  expect_valid(g, R"(["abc","é€😀"])");
  expect_valid(g, R"(["\n\u0041b"])");
  expect_refused_at(g, R"([])", 1);
  expect_refused_at(g, R"([""])", 2);
  expect_refused_at(g, R"(["abcd"])", 5);
  expect_refused_at(g, R"(["a","b","c"])", 8);
}

TEST(JsonChecker, RootNumbersMayEndOrGoOn) {
  const auto g = schema(R"({"type":"number"})");
  JsonChecker c(g);
  ASSERT_TRUE(c.feed("12"));
  EXPECT_TRUE(c.accepting());
  EXPECT_FALSE(c.done());
  ASSERT_TRUE(c.feed(".5"));
  EXPECT_TRUE(c.accepting());
  JsonChecker d(g);
  ASSERT_TRUE(d.feed("-"));
  EXPECT_FALSE(d.accepting());
  JsonChecker e(g);
  std::string many(JsonChecker::kMaxNumberBytes, '1');
  ASSERT_TRUE(e.feed(many));
  EXPECT_FALSE(e.feed('1'));
}

TEST(JsonChecker, RefsAndRecursion) {
  const auto g = schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}},
      "$ref":"#/$defs/node"})");
  expect_valid(g, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})");
  expect_refused_at(g, R"({"v":1,"kids":[{"w":2}]})", 17);
}

TEST(JsonChecker, MarkersAroundTheDocument) {
  Grammar g = json_schema_grammar(OJson::parse(R"({"type":"object","properties":{"name":{"const":"f"}},
      "required":["name"],"additionalProperties":false})"), "s");
  g.prefix = g.literal("<tool_call>\n");
  g.suffix = g.literal("\n</tool_call>");
  const auto gp = std::make_shared<const Grammar>(std::move(g));
  JsonChecker c(gp);
  EXPECT_TRUE(c.in_marker());
  expect_valid(gp, "<tool_call>\n{\"name\":\"f\"}\n</tool_call>");
  expect_refused_at(gp, "<tool_call> {", 11);
  expect_refused_at(gp, "<tool_call>\n{\"name\":\"f\"} ", 24);
  expect_unfinished(gp, "<tool_call>\n{\"name\":\"f\"}");
}

// Every prefix of each valid document is taken, by fresh checkers and by copies (assign).
TEST(JsonChecker, CopiesGoOnAsTheOriginal) {
  const auto g = object_grammar();
  const std::string doc = R"({"a":[1,{"b":"c\u00e9"}],"d":null})";
  JsonChecker c(g), copy(g);
  for (size_t i = 0; i < doc.size(); ++i) {
    copy.assign(c);
    ASSERT_TRUE(copy.feed(std::string_view(doc).substr(i))) << i;
    EXPECT_TRUE(copy.done());
    ASSERT_TRUE(c.feed(static_cast<uint8_t>(doc[i])));
  }
}

TEST(JsonSchema, RefusesWhatItCannotEnforceNamingTheField) {
  auto field_of = [](const std::string& s) {
    try {
      (void)json_schema_grammar(OJson::parse(s), "response_format.json_schema.schema");
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      return e.param;
    }
    return std::string("accepted");
  };
  EXPECT_EQ(field_of(R"({"type":"object","properties":{"x":{"type":"string","pattern":"^a"}}})"),
            "response_format.json_schema.schema.properties.x.pattern");
  EXPECT_EQ(field_of(R"({"type":"integer","minimum":0})"), "response_format.json_schema.schema.minimum");
  EXPECT_EQ(field_of(R"({"oneOf":[{"type":"string"}]})"), "response_format.json_schema.schema.oneOf");
  EXPECT_EQ(field_of(R"({"type":"strings"})"), "response_format.json_schema.schema.type");
  EXPECT_EQ(field_of(R"({"type":"object","required":["a"]})"), "response_format.json_schema.schema.required[0]");
  EXPECT_EQ(field_of(R"({"$ref":"#/$defs/missing"})"), "response_format.json_schema.schema.$ref");
  EXPECT_EQ(field_of(R"({"$ref":"http://x/y"})"), "response_format.json_schema.schema.$ref");
  EXPECT_EQ(field_of(R"({"type":"array","items":[{"type":"string"}]})"), "response_format.json_schema.schema.items");
  EXPECT_EQ(field_of(R"({"type":"string","minLength":3,"maxLength":2})"), "response_format.json_schema.schema.minLength");
  EXPECT_EQ(field_of(R"(false)"), "response_format.json_schema.schema");
  EXPECT_EQ(field_of(R"({"type":"string","title":"t","description":"d"})"), "accepted");
}

TEST(JsonSchema, BoundsDeepAndSelfReferringSchemas) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += R"({"type":"array","items":)";
  deep += "{}";
  for (int i = 0; i < 100; ++i) deep += "}";
  EXPECT_THROW((void)json_schema_grammar(OJson::parse(deep), "s"), ApiError);
  // A $ref to itself alone admits nothing: the checker refuses rather than loops.
  const auto g = schema(R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})");
  JsonChecker c(g);
  EXPECT_FALSE(c.feed('1'));
}

}  // namespace
}  // namespace nvfp4::server

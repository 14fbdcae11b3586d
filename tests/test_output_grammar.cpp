// What requests constrain their output to (server/output_grammar.h): response_format's and
// text.format's shapes and refusals, and tool_choice's call grammar per family: a call the grammar
// admits whole is one that family's parser reads back as that call, and other calls or text are
// refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/ebnf_literal.h"
#include "server/grammar_compile.h"
#include "server/messages_api.h"
#include "server/output_grammar.h"
#include "server/request.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

const char* kTools = R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
    "properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"],"additionalProperties":false}}},
    {"type":"function","function":{"name":"ping"}}])";

bool whole(const std::shared_ptr<const GrammarSpec>& g, const std::string& text) { return grammar_accepts(*g, text); }

std::string param_of(const std::string& body, bool chat = true) {
  try {
    (void)parse_gen_request(body, chat);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.param;
  }
  return "accepted";
}

TEST(OutputGrammar, ResponseFormatShapes) {
  const std::string msgs = R"("messages":[{"role":"user","content":"x"}])";
  EXPECT_EQ(parse_gen_request("{" + msgs + R"(,"response_format":{"type":"text"}})", true).grammar, nullptr);
  const auto obj = parse_gen_request("{" + msgs + R"(,"response_format":{"type":"json_object"}})", true).grammar;
  ASSERT_NE(obj, nullptr);
  EXPECT_TRUE(whole(obj, R"({"a": [1]})"));
  EXPECT_FALSE(whole(obj, "[1]"));
  // Compact or pretty-printed (one newline, then up to 16 spaces); no space before ':' or ','.
  EXPECT_TRUE(whole(obj, "{\n  \"a\": {\"b\": [true, null, -1.5e3]},\n  \"c\": \"\\u00e9t\u00e9\\n\"\n}"));
  EXPECT_TRUE(whole(obj, "{}"));
  EXPECT_TRUE(whole(obj, "{\"été\": \"東京 😀\"}"));
  EXPECT_TRUE(whole(obj, "{ }"));
  EXPECT_FALSE(whole(obj, "{\"a\" : 1}"));
  EXPECT_FALSE(whole(obj, "{\"a\": 1 , \"b\": 2}"));
  EXPECT_FALSE(whole(obj, "{\n\n\"a\": 1}"));
  EXPECT_FALSE(whole(obj, "{\"a\":" + std::string(17, ' ') + "1}"));
  EXPECT_FALSE(whole(obj, "{\"a\": 01}"));
  EXPECT_FALSE(whole(obj, "{\"a\": \"\t\"}"));
  const auto sch = parse_gen_request(R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":
      {"name":"n","strict":true,"schema":{"type":"array","items":{"type":"integer"}}}}})", false).grammar;
  ASSERT_NE(sch, nullptr);
  EXPECT_TRUE(whole(sch, "[1, 2]"));
  EXPECT_FALSE(whole(sch, R"({"a": 1})"));
  EXPECT_EQ(param_of("{" + msgs + R"(,"response_format":{"type":"yaml"}})"), "response_format.type");
  EXPECT_EQ(param_of("{" + msgs + R"(,"response_format":"json"})"), "response_format");
  EXPECT_EQ(param_of("{" + msgs + R"(,"response_format":{"type":"json_schema"}})"), "response_format.json_schema");
  EXPECT_EQ(param_of("{" + msgs + R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}})"),
            "response_format.json_schema.name");
  EXPECT_EQ(param_of("{" + msgs + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"n",
      "schema":{"type":"object","properties":{"d":{"type":"string","format":"ipv7"}}}}}})"),
            "response_format.json_schema.schema.properties.d.format");
  // The Responses shape: the json_schema fields beside type.
  const auto flat = response_format_grammar(OJson::parse(R"({"type":"json_schema","name":"n","schema":{"type":"boolean"}})"),
                                            "text.format", true);
  EXPECT_TRUE(whole(flat, "true"));
  try {
    (void)response_format_grammar(OJson::parse(R"({"type":"json_schema","name":"n","schema":{"not":{}}})"), "text.format", true);
    ADD_FAILURE();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param, "text.format.schema.not");
  }
}

// Qwen3.5 / Qwen3.6's XML call: one call of an offered tool (the named one), its parameters in
// the schema's order, typed as the parser converts them, values free of the parser's end markers.
TEST(OutputGrammar, QwenXmlToolCalls) {
  const auto g = tool_call_grammar(ToolFormat::QwenXml, kTools, "");
  ASSERT_NE(g, nullptr);
  const auto call = [](const std::string& name, const std::string& params) {
    return "<tool_call>\n<function=" + name + ">\n" + params + "</function>\n</tool_call>";
  };
  const auto param = [](const std::string& k, const std::string& v) { return "<parameter=" + k + ">\n" + v + "\n</parameter>\n"; };
  const std::string paris = call("get_weather", param("city", "Paris, FR") + param("unit", "c"));
  EXPECT_TRUE(whole(g, paris));
  EXPECT_TRUE(whole(g, call("get_weather", param("city", "if a < b:\n  return \"<p>\" </par"))));  // '<' in text
  EXPECT_TRUE(whole(g, call("get_weather", param("city", "ends in </parameter"))));
  EXPECT_FALSE(whole(g, call("get_weather", param("city", "a </parameter> b"))));
  EXPECT_FALSE(whole(g, call("get_weather", param("city", "a <parameter=unit> b"))));
  EXPECT_FALSE(whole(g, call("get_weather", param("unit", "c"))));                        // city required
  EXPECT_FALSE(whole(g, call("get_weather", param("city", "P") + param("unit", "k"))));  // enum
  EXPECT_FALSE(whole(g, call("get_weather", param("unit", "c") + param("city", "P"))));  // order
  EXPECT_FALSE(whole(g, call("get_weather", param("city", "P") + param("x", "1"))));
  EXPECT_FALSE(whole(g, "Sure! " + paris));
  EXPECT_TRUE(whole(g, call("ping", param("anything", "at all") + param("n", "2"))));
  EXPECT_TRUE(whole(g, call("ping", "")));
  EXPECT_FALSE(whole(tool_call_grammar(ToolFormat::QwenXml, kTools, "ping"), paris));
  // After a prompt that leaves "<think>\n" open (Qwen3.5/3.6 thinking): reasoning, its close, then
  // the call; the call alone still; no call inside the reasoning instead.
  const auto gt = tool_call_grammar(ToolFormat::QwenXml, kTools, "", "</think>");
  EXPECT_TRUE(whole(gt, "The user wants Paris <b>now</b>.\n</think>\n\n" + paris));
  EXPECT_TRUE(whole(gt, "</think>" + paris));
  EXPECT_FALSE(whole(gt, paris));
  EXPECT_FALSE(whole(gt, "a </think> b </think>\n" + paris));
  EXPECT_FALSE(whole(gt, "thinking\n</think>\n\nSure! " + paris));
  EXPECT_NE(gt->markers.find("</think>"), std::string::npos);
  // What the parser gives back.
  const ParamTypes types = param_types_of(kTools);
  const auto calls = parse_tool_calls(ToolFormat::QwenXml, paris.substr(11, paris.size() - 11 - 12), types);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(OJson::parse(calls[0].arguments), OJson::parse(R"({"city":"Paris, FR","unit":"c"})"));
  // Typed values.
  const char* typed = R"([{"type":"function","function":{"name":"book","parameters":{"type":"object","properties":{
      "count":{"type":"integer"},"price":{"type":["number","null"]},"ok":{"type":"boolean"},"tags":{"type":"array"},
      "when":{"type":"object"},"note":{"type":"string"}},"required":["count"]}}}])";
  const auto gb = tool_call_grammar(ToolFormat::QwenXml, typed, "");
  ASSERT_NE(gb, nullptr);
  const std::string full = call("book", param("count", "-3") + param("price", "2.5e-3") + param("ok", "True") +
                                            param("tags", "[\"a\", 1]") + param("when", "{\"day\": 3, \"x\": [true, null]}") +
                                            param("note", "free\ntext"));
  EXPECT_TRUE(whole(gb, full));
  const auto booked = parse_tool_calls(ToolFormat::QwenXml, full.substr(11, full.size() - 23), param_types_of(typed));
  ASSERT_EQ(booked.size(), 1u);
  EXPECT_EQ(OJson::parse(booked[0].arguments),
            OJson::parse(R"({"count":-3,"price":0.0025,"ok":true,"tags":["a",1],"when":{"day":3,"x":[true,null]},"note":"free\ntext"})"));
  EXPECT_FALSE(whole(gb, call("book", param("count", "1.5"))));
  EXPECT_FALSE(whole(gb, call("book", param("count", "1") + param("ok", "yes"))));
  EXPECT_FALSE(whole(gb, call("book", param("count", "1") + param("tags", "a, b"))));
  EXPECT_FALSE(whole(gb, call("book", param("count", "1") + param("when", "{day: 3}"))));
}

// A string's minLength / maxLength are enforced (in characters, none of them '<'), and numbers stay
// within what the parsers convert back: a 19-digit integer or a 10^400 came back as a string (or a
// null) where the schema asks for a number, so the grammars no longer admit them.
TEST(OutputGrammar, CallFormatsBoundStringsAndNumbersAsTheParsersRead) {
  const char* tools = R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{
      "city":{"type":"string","minLength":2,"maxLength":5},"n":{"type":"integer"},"x":{"type":"number"},
      "free":{"type":"string"}},"required":["city"]}}}])";
  const auto q = tool_call_grammar(ToolFormat::QwenXml, tools, "");
  ASSERT_NE(q, nullptr);
  const auto call = [](const std::string& params) { return "<tool_call>\n<function=f>\n" + params + "</function>\n</tool_call>"; };
  const auto param = [](const std::string& k, const std::string& v) { return "<parameter=" + k + ">\n" + v + "\n</parameter>\n"; };
  EXPECT_TRUE(whole(q, call(param("city", "Paris"))));
  EXPECT_TRUE(whole(q, call(param("city", "Köln"))));  // 4 characters, 5 bytes
  EXPECT_TRUE(whole(q, call(param("city", "ab"))));
  EXPECT_FALSE(whole(q, call(param("city", "a"))));
  EXPECT_FALSE(whole(q, call(param("city", "Parisx"))));
  EXPECT_FALSE(whole(q, call(param("city", "a<b"))));
  EXPECT_TRUE(whole(q, call(param("city", "ab") + param("free", std::string(300, 'z') + "<b>"))));  // unbounded: text
  EXPECT_TRUE(whole(q, call(param("city", "ab") + param("n", "-" + std::string(18, '9')))));
  EXPECT_FALSE(whole(q, call(param("city", "ab") + param("n", std::string(19, '9')))));
  EXPECT_TRUE(whole(q, call(param("city", "ab") + param("x", "-1.5e99"))));
  EXPECT_FALSE(whole(q, call(param("city", "ab") + param("x", "9E1269220635803842206164"))));  // seen from a model
  EXPECT_FALSE(whole(q, call(param("city", "ab") + param("x", "1e400"))));
  // Every number the grammar admits at its bounds converts back to a number.
  const ParamTypes types = param_types_of(tools);
  for (const std::string& v : {"-" + std::string(18, '9'), std::string(18, '9') + "." + std::string(18, '9') + "e99",
                               std::string("-0.000000000000000001e-99")}) {
    const std::string text = call(param("city", "ab") + param(v.find('.') == std::string::npos && v.find('e') == std::string::npos ? "n" : "x", v));
    ASSERT_TRUE(whole(q, text)) << v;
    const auto calls = parse_tool_calls(ToolFormat::QwenXml, text.substr(11, text.size() - 23), types);
    ASSERT_EQ(calls.size(), 1u);
    const OJson args = OJson::parse(calls[0].arguments);
    EXPECT_TRUE(args.size() == 2 && (args.contains("n") ? args["n"] : args["x"]).is_number()) << calls[0].arguments;
  }
  const auto g = tool_call_grammar(ToolFormat::Gemma4, tools, "");
  ASSERT_NE(g, nullptr);
  const auto gcall = [](const std::string& members) { return "<|tool_call>call:f{" + members + "}<tool_call|>"; };
  const auto str = [](const std::string& v) { return "<|\"|>" + v + "<|\"|>"; };
  EXPECT_TRUE(whole(g, gcall("city:" + str("Paris"))));
  EXPECT_TRUE(whole(g, gcall("city:" + str("Köln"))));
  EXPECT_FALSE(whole(g, gcall("city:" + str("a"))));
  EXPECT_FALSE(whole(g, gcall("city:" + str("Parisx"))));
  EXPECT_TRUE(whole(g, gcall("city:" + str("ab") + ",free:" + str(std::string(300, 'z')))));
  EXPECT_TRUE(whole(g, gcall("city:" + str("ab") + ",n:-" + std::string(18, '9'))));
  EXPECT_FALSE(whole(g, gcall("city:" + str("ab") + ",n:" + std::string(19, '9'))));
  EXPECT_TRUE(whole(g, gcall("city:" + str("ab") + ",x:" + std::string(18, '9') + "." + std::string(18, '9'))));
  EXPECT_FALSE(whole(g, gcall("city:" + str("ab") + ",x:1" + std::string(400, '0'))));
  // Bounds past what is enforced, or none, leave the string free.
  for (const char* s : {R"({"type":"string","maxLength":100000})", R"({"type":"string","minLength":-1})",
                        R"({"type":"string","minLength":3,"maxLength":2})", R"({"type":"string"})"})
    EXPECT_EQ(ebnf_bounded_chars(OJson::parse(s)), "") << s;
  EXPECT_EQ(ebnf_bounded_chars(OJson::parse(R"({"minLength":3})")), "Regex(\"[^<]{3,}\")");
}

TEST(OutputGrammar, ToolCallsInEachJsonFormatParseBack) {
  struct Case {
    ToolFormat f;
    std::string call;  // a call of get_weather as the family writes it
    std::string body;  // what the family's parser is given
  };
  const Case cases[] = {
      {ToolFormat::Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
       "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"},
      {ToolFormat::Llama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"},
      {ToolFormat::Mistral, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
       "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(tool_format_name(c.f));
    const auto any = tool_call_grammar(c.f, kTools, "");
    ASSERT_NE(any, nullptr);
    EXPECT_TRUE(whole(any, c.call));
    const auto calls = parse_tool_calls(c.f, c.body);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(OJson::parse(calls[0].arguments), OJson::parse(R"({"city":"Paris"})"));
    // The arguments follow the tool's schema; the named function only; no text instead.
    std::string bad_args = c.call;
    bad_args.replace(bad_args.find("\"Paris\""), 7, "1");
    EXPECT_FALSE(whole(any, bad_args));
    EXPECT_FALSE(whole(tool_call_grammar(c.f, kTools, "ping"), c.call));
    EXPECT_FALSE(whole(any, "Sure! " + c.call));
  }
  const auto ping = tool_call_grammar(ToolFormat::Llama3, kTools, "ping");
  EXPECT_TRUE(whole(ping, R"({"name": "ping", "parameters": {"anything": [1]}})"));
  EXPECT_FALSE(whole(ping, R"({"name": "ping", "parameters": []})"));
  // Gemma 4: a call of an offered tool (the named one) in its own syntax, which its parser reads
  // back. A tool without parameters takes any arguments in the syntax.
  const auto g4 = tool_call_grammar(ToolFormat::Gemma4, kTools, "");
  const std::string g4any = "<|tool_call>call:ping{city:<|\"|>Paris, FR<|\"|>,unit:<|\"|>c<|\"|>,n:-1.5,"
                            "o:{a:[1,true,null,<|\"|>x<|\"|>]},e:[]}<tool_call|>";
  EXPECT_TRUE(whole(g4, g4any));
  EXPECT_TRUE(whole(g4, "<|tool_call>call:ping{}<tool_call|>"));
  const auto g4calls = parse_tool_calls(ToolFormat::Gemma4, g4any.substr(12, g4any.size() - 12 - 12));
  ASSERT_EQ(g4calls.size(), 1u);
  EXPECT_EQ(OJson::parse(g4calls[0].arguments), OJson::parse(R"({"city":"Paris, FR","unit":"c","n":-1.5,"o":{"a":[1,true,null,"x"]},"e":[]})"));
  // get_weather's arguments follow its schema: city (required) and unit (enum), in the order the
  // template writes keys, nothing else.
  const std::string g4call = "<|tool_call>call:get_weather{city:<|\"|>Paris, FR<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|>";
  EXPECT_TRUE(whole(g4, g4call));
  EXPECT_TRUE(whole(g4, "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"));
  EXPECT_FALSE(whole(g4, "<|tool_call>call:get_weather{unit:<|\"|>c<|\"|>}<tool_call|>"));  // city missing
  EXPECT_FALSE(whole(g4, "<|tool_call>call:get_weather{unit:<|\"|>c<|\"|>,city:<|\"|>Paris<|\"|>}<tool_call|>"));
  EXPECT_FALSE(whole(g4, "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,unit:<|\"|>k<|\"|>}<tool_call|>"));
  EXPECT_FALSE(whole(g4, "<|tool_call>call:get_weather{city:1}<tool_call|>"));
  EXPECT_FALSE(whole(g4, "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,n:1}<tool_call|>"));
  EXPECT_FALSE(whole(g4, "<|tool_call>call:get_weather{}<tool_call|>"));
  EXPECT_FALSE(whole(g4, "Sure! " + g4call));
  EXPECT_FALSE(whole(g4, "<|tool_call>call:other{}<tool_call|>"));
  EXPECT_FALSE(whole(g4, "<|tool_call>call:get_weather{city:Paris}<tool_call|>"));
  EXPECT_FALSE(whole(g4, "<|tool_call>call:get_weather{city:<|\"|>a<b<|\"|>}<tool_call|>"));
  EXPECT_FALSE(whole(tool_call_grammar(ToolFormat::Gemma4, kTools, "ping"), g4call));
  EXPECT_EQ(tool_call_grammar(ToolFormat::Gemma4, kTools, "ping")->markers.find("<|tool_call>"), 0u);
  // Each type of the schema subset, nested.
  const char* typed = R"([{"type":"function","function":{"name":"book","parameters":{"type":"object","properties":{
      "Zone":{"type":["string","null"]},"count":{"type":"integer"},"price":{"type":"number"},"ok":{"type":"boolean"},
      "tags":{"type":"array","items":{"type":"string"}},"when":{"type":"object","properties":{"day":{"const":3},"b":{"type":"boolean"}},
      "required":["day"]},"alt":{"anyOf":[{"type":"integer"},{"enum":["x",null]}]}},"required":["count","tags"]}}}])";
  const auto gb = tool_call_grammar(ToolFormat::Gemma4, typed, "");
  ASSERT_NE(gb, nullptr);
  const std::string full = "<|tool_call>call:book{alt:7,count:-3,ok:true,price:2.5,tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>],"
                           "when:{b:false,day:3},Zone:null}<tool_call|>";  // dictsort: case-insensitive, so Zone last
  EXPECT_TRUE(whole(gb, full));
  const auto booked = parse_tool_calls(ToolFormat::Gemma4, full.substr(12, full.size() - 24));
  ASSERT_EQ(booked.size(), 1u);
  EXPECT_EQ(OJson::parse(booked[0].arguments)["when"], OJson::parse(R"({"b":false,"day":3})"));
  EXPECT_TRUE(whole(gb, "<|tool_call>call:book{count:0,tags:[]}<tool_call|>"));
  EXPECT_TRUE(whole(gb, "<|tool_call>call:book{count:0,tags:[],Zone:None}<tool_call|>"));  // the template's null
  EXPECT_TRUE(whole(gb, "<|tool_call>call:book{alt:<|\"|>x<|\"|>,count:0,tags:[],Zone:<|\"|>z<|\"|>}<tool_call|>"));
  EXPECT_FALSE(whole(gb, "<|tool_call>call:book{count:1.5,tags:[]}<tool_call|>"));  // integer
  EXPECT_FALSE(whole(gb, "<|tool_call>call:book{count:1,tags:[1]}<tool_call|>"));   // items: string
  EXPECT_FALSE(whole(gb, "<|tool_call>call:book{count:1,ok:1,tags:[]}<tool_call|>"));
  EXPECT_FALSE(whole(gb, "<|tool_call>call:book{count:1,tags:[],when:{day:4}}<tool_call|>"));  // const
  EXPECT_FALSE(whole(gb, "<|tool_call>call:book{count:1,tags:[],when:{}}<tool_call|>"));       // day required
  EXPECT_FALSE(whole(gb, "<|tool_call>call:book{alt:<|\"|>y<|\"|>,count:1,tags:[]}<tool_call|>"));
  EXPECT_FALSE(whole(gb, "<|tool_call>call:book{count:1}<tool_call|>"));  // tags required
  // Templates with no call format stay unconstrained.
  EXPECT_EQ(tool_call_grammar(ToolFormat::None, kTools, ""), nullptr);
  // A parameters schema the grammar cannot enforce is refused naming it; a pattern is enforced,
  // and a $ref into the parameters' own $defs still resolves inside the call.
  try {
    (void)tool_call_grammar(ToolFormat::Hermes, R"([{"type":"function","function":{"name":"f","parameters":
        {"type":"object","properties":{"x":{"type":"string","not":{"const":"a"}}}}}}])", "");
    ADD_FAILURE();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param, "tools[0].function.parameters.properties.x.not");
  }
  const auto pat = tool_call_grammar(ToolFormat::Llama3, R"([{"type":"function","function":{"name":"f","parameters":
      {"type":"object","properties":{"x":{"$ref":"#/$defs/code"}},"required":["x"],
       "$defs":{"code":{"type":"string","pattern":"^[A-Z]{3}$"}}}}}])", "");
  EXPECT_TRUE(whole(pat, R"({"name": "f", "parameters": {"x": "ABC"}})"));
  EXPECT_FALSE(whole(pat, R"({"name": "f", "parameters": {"x": "abc"}})"));
}

std::shared_ptr<const GrammarSpec> schema(const std::string& s) {
  return json_schema_grammar(OJson::parse(s), "response_format.json_schema.schema");
}

std::string refused(const std::string& s) {
  try {
    (void)schema(s);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.param;
  }
  return "accepted";
}

TEST(OutputGrammar, SchemasXgrammarEnforces) {
  const auto pat = schema(R"({"type":"string","pattern":"^[a-c]+-[0-9]{2}$"})");
  EXPECT_TRUE(whole(pat, R"("abc-12")"));
  EXPECT_FALSE(whole(pat, R"("abd-12")"));
  const auto num = schema(R"({"type":"integer","minimum":3,"maximum":12})");
  EXPECT_TRUE(whole(num, "12"));
  EXPECT_FALSE(whole(num, "13"));
  EXPECT_FALSE(whole(num, "2"));
  const auto one = schema(R"({"oneOf":[{"type":"string"},{"type":"integer"}]})");
  EXPECT_TRUE(whole(one, "7"));
  EXPECT_FALSE(whole(one, "true"));
  const auto all = schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"]}]})");
  EXPECT_TRUE(whole(all, R"({"a": true})"));
  EXPECT_FALSE(whole(all, R"({"a": 1})"));
  const auto tup = schema(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})");
  EXPECT_TRUE(whole(tup, R"(["x", 1])"));
  EXPECT_FALSE(whole(tup, R"([1, "x"])"));
  const auto date = schema(R"({"type":"string","format":"date"})");
  EXPECT_TRUE(whole(date, R"("2024-02-29")"));
  EXPECT_FALSE(whole(date, R"("yesterday")"));
  // Where xgrammar's format regex admits invalid values, the exact pattern (schema_guard.h).
  EXPECT_FALSE(whole(date, R"("2021-02-31")"));
  EXPECT_FALSE(whole(date, R"("2023-02-29")"));
  EXPECT_TRUE(whole(schema(R"({"type":"string","format":"date"})"), R"("2000-02-29")"));
  const auto ip = schema(R"({"type":"string","format":"ipv4"})");
  EXPECT_TRUE(whole(ip, R"("91.0.40.4")"));
  EXPECT_FALSE(whole(ip, R"("91.000.40.4")"));
  const auto dt = schema(R"({"type":"string","format":"date-time"})");
  EXPECT_TRUE(whole(dt, R"("2024-01-31T23:59:59.123456+02:00")"));
  EXPECT_FALSE(whole(dt, R"("2024-01-31T23:59:59.1234567Z")"));
  EXPECT_EQ(refused(R"({"type":"string","format":"date","pattern":"^2"})"),
            "response_format.json_schema.schema.format");
  // What xgrammar would drop without enforcing it is refused, naming it.
  const std::string p = "response_format.json_schema.schema";
  EXPECT_EQ(refused(R"({"not":{"type":"string"}})"), p + ".not");
  EXPECT_EQ(refused(R"({"allOf":[{"type":"object"},{"required":["a"]}]})"), p + ".allOf");
  EXPECT_EQ(refused(R"({"oneOf":[{"type":"number"},{"type":"integer"}]})"), p + ".oneOf");
  EXPECT_EQ(refused(R"({"type":"string","pattern":"a+","maxLength":3})"), p + ".maxLength");
  EXPECT_EQ(refused(R"({"type":"number","multipleOf":0.5})"), p + ".multipleOf");
  EXPECT_EQ(refused(R"({"type":"array","uniqueItems":true})"), p + ".uniqueItems");
  EXPECT_EQ(refused(R"({"type":"array","items":[{"type":"string"}]})"), p + ".items");
  EXPECT_EQ(refused(R"({"type":"strin"})"), p);  // xgrammar's own refusal names the schema
  EXPECT_EQ(refused(R"(false)"), p);
}

TEST(OutputGrammar, GrammarFieldsAndTheirRefusals) {
  const std::string msgs = R"("messages":[{"role":"user","content":"x"}])";
  const auto g = parse_gen_request("{" + msgs + R"(,"grammar":"root ::= \"yes\" | \"no\" ws\nws ::= [ ]*"})", true).grammar;
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(whole(g, "yes"));
  EXPECT_TRUE(whole(g, "no  "));
  EXPECT_FALSE(whole(g, "maybe"));
  const auto c = parse_gen_request(R"({"prompt":"x","guided_choice":["red","green"]})", false).grammar;
  EXPECT_TRUE(whole(c, "green"));
  EXPECT_FALSE(whole(c, "blue"));
  const auto r = parse_gen_request(R"({"prompt":"x","structured_outputs":{"regex":"[0-9]{3}"}})", false).grammar;
  EXPECT_TRUE(whole(r, "123"));
  EXPECT_FALSE(whole(r, "12"));
  const auto j = parse_gen_request(R"({"prompt":"x","guided_json":"{\"type\":\"boolean\"}"})", false).grammar;
  EXPECT_TRUE(whole(j, "false"));
  EXPECT_EQ(param_of("{" + msgs + R"(,"grammar":"root ::= undefined_rule"})"), "grammar");
  EXPECT_EQ(param_of("{" + msgs + R"(,"grammar":7})"), "grammar");
  EXPECT_EQ(param_of(R"({"prompt":"x","guided_regex":"(["})", false), "guided_regex");
  EXPECT_EQ(param_of("{" + msgs + R"(,"response_format":{"type":"json_object"},"grammar":"root ::= \"a\""})"), "grammar");
}

// xgrammar quotes the grammar around a parse error cut at a byte, which can split a character
// (found by fuzz_server_request): the error bodies still dump as strict JSON, with U+FFFD there.
TEST(OutputGrammar, RefusalQuotingHalfACharacterIsValidJson) {
  const std::string body = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"grammar\":\"# c\\nroot ::= item "
                           "(\\\",\\\" item\xd2\x84" "0,3y\\nitem ::= [a-z]+ | \\\"(\\\" root \\\")\\\" | num-x\\n"
                           "num-x ::= [0-9]? [1-9]*\"}";
  ASSERT_FALSE(nlohmann::json::parse(body, nullptr, false).is_discarded());
  try {
    (void)parse_gen_request(body, true);
    FAIL() << "the grammar was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param, "grammar");
    const auto strict = nlohmann::json::error_handler_t::strict;
    EXPECT_ANY_THROW((void)nlohmann::json(e.what()).dump(-1, ' ', false, strict)) << "the premise: raw bytes cut mid-character";
    const std::string out = error_json(e).dump(-1, ' ', false, strict);
    EXPECT_NE(out.find("grammar"), std::string::npos) << out;
    EXPECT_NO_THROW((void)anthropic_error_json(e).dump(-1, ' ', false, strict));
  }
}

}  // namespace
}  // namespace nvfp4::server

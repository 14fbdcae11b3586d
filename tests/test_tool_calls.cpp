// The chat output parser (reasoning and tool calls per family), the response shapes it feeds,
// and the request fields of tools, without a model: whole texts, and the same texts pushed in
// every split (one byte at a time and at random cuts) give the same reply.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/grammar_compile.h"
#include "server/output_grammar.h"
#include "server/request.h"
#include "server/tool_calls.h"
#include "nvfp4/chat.h"
#include "test_util.h"

namespace nvfp4::server {
namespace {

ChatDelta whole(ChatParseOptions o, const std::string& text) {
  ChatOutputParser p(o, 1);
  ChatDelta d = p.push(text);
  ChatDelta f = p.finish();
  d.reasoning += f.reasoning;
  d.content += f.content;
  for (auto& c : f.calls) d.calls.push_back(c);
  return d;
}

// The text pushed in pieces of `cut` bytes (0: random cuts): the deltas joined.
ChatDelta pieces(ChatParseOptions o, const std::string& text, size_t cut, std::mt19937& rng) {
  ChatOutputParser p(o, 1);
  ChatDelta d;
  auto add = [&](ChatDelta x) {
    // Content never shows a marker's beginning that was later taken as a marker.
    d.reasoning += x.reasoning;
    d.content += x.content;
    for (auto& c : x.calls) d.calls.push_back(c);
  };
  for (size_t i = 0; i < text.size();) {
    const size_t n = cut ? cut : 1 + rng() % 7;
    add(p.push(text.substr(i, n)));
    i += n;
  }
  add(p.finish());
  return d;
}

void expect_same(const ChatDelta& a, const ChatDelta& b, const std::string& what) {
  EXPECT_EQ(a.reasoning, b.reasoning) << what;
  EXPECT_EQ(a.content, b.content) << what;
  ASSERT_EQ(a.calls.size(), b.calls.size()) << what;
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].name, b.calls[i].name) << what;
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments) << what;
  }
}

struct Case {
  ChatParseOptions o;
  std::string text;
  std::string reasoning, content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

ChatParseOptions opts(ToolFormat f, bool reasoning = false, bool in_reasoning = false) {
  ChatParseOptions o;
  o.tools = f;
  o.reasoning = reasoning;
  o.in_reasoning = in_reasoning;
  return o;
}

// Qwen3.5/3.6's XML-like calls, with the request's tools (the parameters' types).
constexpr const char* kXmlTools = R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
  "properties":{"city":{"type":"string"},"days":{"type":"integer"},"scale":{"type":"number"},"exact":{"type":"boolean"},
  "where":{"type":"object"},"tags":{"type":"array"},"maybe":{"type":["integer","null"]},"note":{"description":"no type"}}}}}])";
ChatParseOptions xml(bool reasoning = false, bool in_reasoning = false) {
  ChatParseOptions o = opts(ToolFormat::QwenXml, reasoning, in_reasoning);
  o.tools_json = kXmlTools;
  return o;
}

// Gemma 4: <|tool_call>call:NAME{...}<tool_call|>, reasoning in <|channel>thought\n...<channel|>.
ChatParseOptions gemma4(bool reasoning = true, bool in_reasoning = false) {
  ChatParseOptions o = opts(ToolFormat::Gemma4, reasoning, in_reasoning);
  o.think_open = "<|channel>";
  o.think_close = "<channel|>";
  o.think_label = "thought\n";
  return o;
}

}  // namespace

TEST(ToolCalls, ParsesEachFamilyWholeAndInPieces) {
  const std::vector<Case> cases = {
      {opts(ToolFormat::Hermes), "Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
       "", "Sure.", {{"get_weather", R"({"city":"Paris"})"}}},
      {opts(ToolFormat::Hermes),
       "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, 2.5, \"<tool_call>\"]}}\n</tool_call>\n"
       "<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"y\\\": null}\"}\n</tool_call>",
       "", "", {{"a", R"({"x":[1,2.5,"<tool_call>"]})"}, {"b", R"({"y":null})"}}},
      {opts(ToolFormat::Hermes), "x <tool_call>{not json}</tool_call> y", "", "x <tool_call>{not json}</tool_call> y", {}},
      {opts(ToolFormat::Hermes), "cut <tool_call>{\"name\": \"f\", \"arguments\": {}}", "", "cut ", {{"f", "{}"}}},
      {opts(ToolFormat::Hermes), "a <tool_ca", "", "a <tool_ca", {}},
      {opts(ToolFormat::None), "<tool_call>{\"name\": \"f\"}</tool_call>", "", "<tool_call>{\"name\": \"f\"}</tool_call>", {}},
      {opts(ToolFormat::Hermes, true), "<think>\nLet me see.\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"k\": \"v\"}}\n</tool_call>",
       "\nLet me see.\n", "", {{"f", R"({"k":"v"})"}}},
      {opts(ToolFormat::None, true), "<think>\nhmm\n</think>\n\nIt is 4.", "\nhmm\n", "It is 4.", {}},
      {opts(ToolFormat::None, true, true), "plan it</think>\n\nDone </thin", "plan it", "Done </thin", {}},
      {opts(ToolFormat::None, true, true), "never closed <", "never closed <", "", {}},
      {opts(ToolFormat::None, false), "<think>kept</think>", "", "<think>kept</think>", {}},
      {opts(ToolFormat::Llama3), " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", "",
       {{"get_weather", R"({"city":"Paris"})"}}},
      {opts(ToolFormat::Llama3), "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"n\": 1}}", "", "",
       {{"a", "{}"}, {"b", R"({"n":1})"}}},
      {opts(ToolFormat::Llama3), "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"q\": \"}\"}}", "", "", {{"f", R"({"q":"}"})"}}},
      {opts(ToolFormat::Llama3), "Hello {\"name\": \"f\", \"parameters\": {}}", "", "Hello {\"name\": \"f\", \"parameters\": {}}", {}},
      {opts(ToolFormat::Llama3), "{\"answer\": 42}", "", "{\"answer\": 42}", {}},
      {opts(ToolFormat::Llama3), "  {broken", "", "  {broken", {}},
      {opts(ToolFormat::Mistral), "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": \"abcDEF123\"}]", "", "",
       {{"f", R"({"a":1})"}}},
      {opts(ToolFormat::Mistral), "Ok.[TOOL_CALLS]f[ARGS]{\"a\": \"[ARGS]\"}[TOOL_CALLS]g[CALL_ID]123456789[ARGS]{}", "", "Ok.",
       {{"f", R"({"a":"[ARGS]"})"}, {"g", "{}"}}},
      {opts(ToolFormat::Mistral), "[TOOL_CALLS] nonsense", "", "[TOOL_CALLS] nonsense", {}},
      // Qwen3.5/3.6: thinking opened by the prompt, text, then calls in <function=...><parameter=...> form.
      {xml(true, true),
       "The user wants weather.\n</think>\n\nLet me check.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
       "Paris <b>\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
       "The user wants weather.\n", "Let me check.\n\n", {{"get_weather", R"({"city":"Paris <b>","days":3})"}}},
      {xml(), "<tool_call>\n<function=get_weather>\n<parameter=scale>\n2.0\n</parameter>\n<parameter=exact>\nTrue\n</parameter>\n"
       "<parameter=where>\n{\"lat\": 1.5, \"tags\": [\"a\"]}\n</parameter>\n<parameter=tags>\n[1, 2]\n</parameter>\n"
       "<parameter=maybe>\nnull\n</parameter>\n<parameter=note>\n42\n</parameter>\n<parameter=city>\nmulti\nline\n\n</parameter>\n"
       "</function>\n</tool_call>\n<tool_call>\n<function=other>\n</function>\n</tool_call>",
       "", "", {{"get_weather", R"({"scale":2,"exact":true,"where":{"lat":1.5,"tags":["a"]},"tags":[1,2],"maybe":null,"note":"42","city":"multi\nline\n"})"},
                {"other", "{}"}}},
      // A type the text does not fit stays text; an unknown parameter is text; a left-out close is tolerated.
      {xml(), "<tool_call><function=get_weather><parameter=days>three</parameter><parameter=where>{bad</parameter>"
              "<parameter=scale>1.25<parameter=extra>x</function></tool_call>",
       "", "", {{"get_weather", R"({"days":"three","where":"{bad","scale":1.25,"extra":"x"})"}}},
      {xml(), "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n", "", "",
       {{"get_weather", R"({"city":"Paris"})"}}},
      {xml(), "x <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> y", "",
       "x <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> y", {}},
      {xml(), "<tool_call><function=a b\nc></function></tool_call>", "", "<tool_call><function=a b\nc></function></tool_call>", {}},
      {xml(), "<tool_call><function=f>stray<parameter=k>v</parameter></function></tool_call>", "",
       "<tool_call><function=f>stray<parameter=k>v</parameter></function></tool_call>", {}},
      // Gemma 4: the channel's label is not reasoning; strings between <|"|> marks are taken as
      // they are (quotes, braces, commas, newlines); None and null are null; bare text is a string.
      {gemma4(), "<|channel>thought\nThe user wants weather.<channel|>Let me check.<|tool_call>call:get_weather{city:<|\"|>Paris, \"FR\" {x}<|\"|>,"
                 "days:3}<tool_call|>",
       "The user wants weather.", "Let me check.", {{"get_weather", R"({"city":"Paris, \"FR\" {x}","days":3})"}}},
      {gemma4(), "<|tool_call>call:search_web{filters:{lang:<|\"|>fr<|\"|>,sites:[<|\"|>a.fr<|\"|>,<|\"|>b.fr<|\"|>]},limit:2.5,"
                 "note:None,query:<|\"|>mus\u00e9es\nlignes<|\"|>,safe:true,n:-1e3,x:null,w:[],o:{},t:false}<tool_call|>"
                 "<|tool_call>call:ping{}<tool_call|>",
       "", "", {{"search_web", R"({"filters":{"lang":"fr","sites":["a.fr","b.fr"]},"limit":2.5,"note":null,"query":"musées\nlignes","safe":true,"n":-1000.0,"x":null,"w":[],"o":{},"t":false})"},
                {"ping", "{}"}}},
      {gemma4(), "<|tool_call>call:f{<|\"|>quoted key<|\"|>:1, unit : celsius}<tool_call|>", "", "",
       {{"f", R"({"quoted key":1,"unit":"celsius"})"}}},
      {gemma4(false), "<|channel>thought\nkept<channel|>", "", "<|channel>thought\nkept<channel|>", {}},
      {gemma4(true, true), "thought\nalready inside<channel|>\n\nAnswer.", "already inside", "Answer.", {}},
      {gemma4(true, true), "though it never closes", "though it never closes", "", {}},
      {gemma4(true, true), "thou", "thou", "", {}},
      {gemma4(), "<|channel>no label<channel|>x", "no label", "x", {}},
      // Not Gemma 4's call form: the block stays content.
      {gemma4(), "a<|tool_call>call:f{city:<|\"|>open}<tool_call|>b", "", "a<|tool_call>call:f{city:<|\"|>open}<tool_call|>b", {}},
      {gemma4(), "<|tool_call>call:bad name{}<tool_call|>", "", "<|tool_call>call:bad name{}<tool_call|>", {}},
      {gemma4(), "<|tool_call>f{a:1}<tool_call|>", "", "<|tool_call>f{a:1}<tool_call|>", {}},
      {gemma4(), "<|tool_call>call:f{a:1}}<tool_call|>", "", "<|tool_call>call:f{a:1}}<tool_call|>", {}},
      {gemma4(), "<|tool_call>call:f{a:[1,{b:2]}<tool_call|>", "", "<|tool_call>call:f{a:[1,{b:2]}<tool_call|>", {}},
      {gemma4(), "<|tool_call>call:f{a}<tool_call|>", "", "<|tool_call>call:f{a}<tool_call|>", {}},
      {gemma4(), "cut <|tool_call>call:f{a:<|\"|>x<|\"|>}", "", "cut ", {{"f", R"({"a":"x"})"}}},
  };
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    const ChatDelta w = whole(c.o, c.text);
    EXPECT_EQ(w.reasoning, c.reasoning) << c.text;
    EXPECT_EQ(w.content, c.content) << c.text;
    ASSERT_EQ(w.calls.size(), c.calls.size()) << c.text;
    for (size_t i = 0; i < c.calls.size(); ++i) {
      EXPECT_EQ(w.calls[i].name, c.calls[i].first) << c.text;
      EXPECT_EQ(w.calls[i].arguments, c.calls[i].second) << c.text;
      ASSERT_EQ(w.calls[i].id.size(), 9u);
      for (char ch : w.calls[i].id) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch))) << w.calls[i].id;
    }
    for (size_t cut : {1, 2, 3, 5, 0, 0, 0}) expect_same(pieces(c.o, c.text, cut, rng), w, c.text + " cut " + std::to_string(cut));
  }
  // A model's own 9-character id is kept (Mistral's templates need it back); another is replaced.
  EXPECT_EQ(whole(opts(ToolFormat::Mistral), "[TOOL_CALLS]f[CALL_ID]123456789[ARGS]{}").calls.at(0).id, "123456789");
  EXPECT_NE(whole(opts(ToolFormat::Mistral), "[TOOL_CALLS]f[CALL_ID]12[ARGS]{}").calls.at(0).id, "12");
}

TEST(ToolCalls, ContentIsSentAsSoonAsItCannotBeAMarker) {
  ChatOutputParser p(opts(ToolFormat::Hermes, true), 1);
  EXPECT_EQ(p.push("Hello").content, "Hello");
  EXPECT_EQ(p.push(" <tool").content, " ");  // "<tool" may begin <tool_call>: held
  EXPECT_EQ(p.push("s are").content, "<tools are");
  const ChatDelta d = p.push("<tool_call>{\"name\": \"f\", \"arguments\": {}}");
  EXPECT_TRUE(d.empty());  // an unfinished call is held whole
  const ChatDelta e = p.push("</tool_call>");
  ASSERT_EQ(e.calls.size(), 1u);
  EXPECT_EQ(p.n_calls(), 1);
}

TEST(ToolCalls, FamilyFromTheTemplate) {
  const std::map<std::string, ToolFormat> want = {
      {"qwen3", ToolFormat::Hermes},         {"qwen2.5", ToolFormat::Hermes},     {"qwq-32b", ToolFormat::Hermes},
      {"qwen3.5", ToolFormat::QwenXml},      {"qwen3.5-small", ToolFormat::QwenXml}, {"qwen3.6", ToolFormat::QwenXml},
      {"hermes3-tool-use", ToolFormat::Hermes}, {"llama3.1", ToolFormat::Llama3}, {"llama3.2", ToolFormat::Llama3},
      {"mistral-nemo", ToolFormat::Mistral}, {"mistral-small-3.2", ToolFormat::Mistral},
      {"smollm2", ToolFormat::None},         {"chatml", ToolFormat::None},        {"gemma2", ToolFormat::None},
      {"phi3.5", ToolFormat::None},          {"gemma4", ToolFormat::Gemma4},     {"muse-glimmer", ToolFormat::Atem}};
  for (const auto& [name, f] : want) {
    std::ifstream in(test::fixture_path("chat_templates/" + name + ".jinja"), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    ASSERT_FALSE(ss.str().empty()) << name;
    EXPECT_EQ(tool_format_of(ss.str()), f) << name << ": " << tool_format_name(tool_format_of(ss.str()));
  }
}

// What the Qwen3.5/3.6 templates write for a call in history parses back to the same call (the
// model is trained on that form), and enable_thinking from chat_template_kwargs reaches the template.
TEST(ToolCalls, QwenXmlRoundTripsThroughTheTemplates) {
  const std::string args = R"({"city":"Paris","days":3,"scale":0.5,"exact":true,"where":{"lat":1.5,"tags":["a","b"]},"tags":[]})";
  for (const char* name : {"qwen3.5", "qwen3.6"}) {
    const GenRequest r = parse_gen_request(std::string(R"({"messages":[{"role":"user","content":"weather?"},
        {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather",
        "arguments":)") + nlohmann::json(args).dump() + R"(}}]}],"tools":)" + kXmlTools +
                                               R"(,"chat_template_kwargs":{"enable_thinking":false}})",
                                           true);
    const ChatTemplate t = ChatTemplate::builtin(name);
    ChatRenderOptions o;
    o.tools_json = r.tools_json;
    for (const auto& [k, v] : r.template_vars) o.json_vars[k] = v;
    const std::string text = t.render(r.messages, o);
    const size_t b = text.rfind("<tool_call>"), e = text.rfind("<|im_end|>");
    ASSERT_NE(b, std::string::npos) << text;
    ASSERT_EQ(tool_format_of(t.text()), ToolFormat::QwenXml);
    const ChatDelta d = whole(xml(), text.substr(b, e - b));
    ASSERT_EQ(d.calls.size(), 1u) << name << ": " << text;
    EXPECT_EQ(d.calls[0].name, "get_weather");
    EXPECT_EQ(d.calls[0].arguments, args) << name << ": " << text;
    EXPECT_EQ(d.content, "");
    // The call as the template writes it (typed values as Python prints them, JSON for the
    // object and array) is what tool_choice's grammar admits.
    const std::string call = text.substr(b, text.find("</tool_call>", b) + 12 - b);
    const auto g = server::tool_call_grammar(ToolFormat::QwenXml, r.tools_json, "");
    ASSERT_NE(g, nullptr);
    EXPECT_TRUE(server::grammar_accepts(*g, call)) << name << ": " << call;
    // The generation prompt: thinking closed when chat_template_kwargs says so, open by default.
    std::vector<ChatMessage> user = {r.messages[0]};
    o.add_generation_prompt = true;
    const std::string off = t.render(user, o);
    EXPECT_TRUE(off.ends_with("<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")) << name << ": " << off;
    o.json_vars.erase("enable_thinking");
    const std::string on = t.render(user, o);
    EXPECT_TRUE(on.ends_with("<|im_end|>\n<|im_start|>assistant\n<think>\n")) << name << ": " << on;
  }
}

// A request as an agent sends it to a Qwen3.5/3.6 or Nemotron 3 model (the same <tool_call>
// <function=...> form), the prompt the template makes, and the reply as the model writes it:
// reasoning, content and an OpenAI tool call come apart.
TEST(ToolCalls, QwenReplyIntoReasoningContentAndCalls) {
  for (const char* name : {"qwen3.5", "qwen3.6", "nemotron3"}) {
    for (const bool thinking : {true, false}) {
      const GenRequest r = parse_gen_request(std::string(R"({"messages":[{"role":"user","content":"weather in Paris?"}],"tools":)") +
                                                 kXmlTools + R"(,"chat_template_kwargs":{"enable_thinking":)" +
                                                 (thinking ? "true" : "false") + "}}",
                                             true);
      const ChatTemplate t = ChatTemplate::builtin(name);
      ChatRenderOptions o;
      o.tools_json = r.tools_json;
      for (const auto& [k, v] : r.template_vars) o.json_vars[k] = v;
      const std::string prompt = t.render(r.messages, o);
      const ChatParseOptions po = chat_parse_options(t.text(), r.tools_json, prompt);
      EXPECT_EQ(po.tools, ToolFormat::QwenXml);
      EXPECT_TRUE(po.reasoning);
      EXPECT_EQ(po.in_reasoning, thinking) << name;
      const std::string reply = std::string(thinking ? "Paris, so call the tool.\n</think>\n\n" : "") +
                                "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                                "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>";
      std::mt19937 rng(3);
      for (size_t cut : {0, 1, 4, 0}) {
        const ChatDelta d = pieces(po, reply, cut, rng);
        EXPECT_EQ(d.reasoning, thinking ? "Paris, so call the tool.\n" : "") << name;
        EXPECT_EQ(d.content, "") << name;
        ASSERT_EQ(d.calls.size(), 1u) << name;
        EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris","days":2})");
      }
    }
  }
  // tool_choice "none" (no tools given to the parser): the text stays content.
  const ChatParseOptions none = chat_parse_options(ChatTemplate::builtin("qwen3.5").text(), "", "x");
  EXPECT_EQ(none.tools, ToolFormat::None);
}

// Gemma 4's template and its replies: a call in history is written in the form the parser reads
// back; the generation prompt opens the reasoning channel only with enable_thinking (else it
// writes an empty one); a reply comes apart into reasoning, content and the call.
TEST(ToolCalls, Gemma4RoundTripsThroughItsTemplate) {
  const std::string args = R"({"city":"Paris","days":3,"scale":0.5,"exact":true,"where":{"lat":1.5,"tags":["a","b"]},"tags":[],"none":null})";
  // (Every parameter typed: the template reads value['type'][0] of one without a type, which
  // jinja2 refuses as undefined, as it does here.)
  const std::string tools = R"([{"type":"function","function":{"name":"get_weather","description":"Weather.","parameters":{
    "type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"unit":{"type":"string","enum":["c","f"]},
    "where":{"type":"object","properties":{"lat":{"type":"number"}}},"tags":{"type":"array","items":{"type":"string"}},
    "maybe":{"type":["integer","null"]}},"required":["city"]}}}])";
  const ChatTemplate t = ChatTemplate::builtin("gemma4");
  for (const bool thinking : {false, true}) {
    const GenRequest r = parse_gen_request(std::string(R"({"messages":[{"role":"user","content":"weather?"},
        {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather",
        "arguments":)") + nlohmann::json(args).dump() + R"(}}]}],"tools":)" + tools +
                                               R"(,"chat_template_kwargs":{"enable_thinking":)" + (thinking ? "true" : "false") + "}}",
                                           true);
    ChatRenderOptions o;
    o.tools_json = r.tools_json;
    for (const auto& [k, v] : r.template_vars) o.json_vars[k] = v;
    const std::string text = t.render(r.messages, o);
    const size_t b = text.rfind("<|tool_call>"), e = text.rfind("<turn|>");
    ASSERT_NE(b, std::string::npos) << text;
    const ChatParseOptions po = chat_parse_options(t.text(), r.tools_json, text);
    EXPECT_EQ(po.tools, ToolFormat::Gemma4);
    EXPECT_EQ(po.think_close, "<channel|>");
    const ChatDelta d = whole(po, text.substr(b, e - b));
    ASSERT_EQ(d.calls.size(), 1u) << text;
    EXPECT_EQ(d.calls[0].name, "get_weather");
    // The template sorts the keys (dictsort): the same object, in that order.
    EXPECT_EQ(nlohmann::json::parse(d.calls[0].arguments), nlohmann::json::parse(args)) << text;
    EXPECT_EQ(d.content, "");
    std::vector<ChatMessage> user = {r.messages[0]};
    o.add_generation_prompt = true;
    const std::string prompt = t.render(user, o);
    EXPECT_EQ(prompt.ends_with("<|turn>model\n<|channel>thought\n<channel|>"), !thinking) << prompt;
    const ChatParseOptions pp = chat_parse_options(t.text(), r.tools_json, prompt);
    EXPECT_FALSE(pp.in_reasoning);
    const std::string reply = std::string(thinking ? "<|channel>thought\nParis, so call the tool.<channel|>" : "") +
                              "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:2}<tool_call|>";
    std::mt19937 rng(5);
    for (size_t cut : {0, 1, 3, 0}) {
      const ChatDelta r2 = pieces(pp, reply, cut, rng);
      EXPECT_EQ(r2.reasoning, thinking ? "Paris, so call the tool." : "");
      EXPECT_EQ(r2.content, "");
      ASSERT_EQ(r2.calls.size(), 1u);
      EXPECT_EQ(r2.calls[0].arguments, R"({"city":"Paris","days":2})");
    }
  }
  // A call of the schema's own keys as the template writes it (dictsort, its number and literal
  // forms) is what tool_choice's grammar admits; the same call with a key out of order is not.
  const std::string own = R"({"unit":"f","city":"Paris","where":{"lat":-1.25},"tags":["a","b"],"maybe":null,"days":3})";
  const GenRequest r = parse_gen_request(std::string(R"({"messages":[{"role":"user","content":"weather?"},
      {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather",
      "arguments":)") + nlohmann::json(own).dump() + R"(}}]}],"tools":)" + tools + "}", true);
  ChatRenderOptions o;
  o.tools_json = r.tools_json;
  const std::string text = t.render(r.messages, o);
  const size_t b = text.rfind("<|tool_call>"), e = text.rfind("<tool_call|>");
  ASSERT_NE(e, std::string::npos) << text;
  const std::string call = text.substr(b, e + 12 - b);
  const auto g = server::tool_call_grammar(ToolFormat::Gemma4, r.tools_json, "");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(server::grammar_accepts(*g, call)) << call;
  std::string swapped = call;
  const size_t c = swapped.find("city:"), d = swapped.find(",days:");
  ASSERT_TRUE(c != std::string::npos && d != std::string::npos) << call;
  swapped = swapped.substr(0, c) + swapped.substr(d + 1, swapped.find(',', d + 1) - d - 1) + "," +
            swapped.substr(c, d - c) + swapped.substr(swapped.find(',', d + 1));
  EXPECT_FALSE(server::grammar_accepts(*g, swapped)) << swapped;
}

// Muse Glimmer: a reply is messages (to=self reasoning, to=NAME an Atem call, to=user the answer).
// What its template writes for an assistant turn (reasoning, then calls) parses back to the same
// reasoning and calls, whole and in every split; the answer after the reasoning is content.
TEST(ToolCalls, MuseGlimmerRoundTripsThroughItsTemplate) {
  const std::string args = R"({"city":"Paris","days":3,"scale":0.5,"exact":true,"where":{"lat":1.5,"tags":["a","b"]},"tags":[],"maybe":null,"note":"two\nlines <b>"})";
  const std::string args2 = R"({"city":"Tokyo"})";
  // kXmlTools with a description (the template writes it with tojson: transformers refuses a tool without one).
  const std::string tools = R"([{"type":"function","function":{"name":"get_weather","description":"Weather.","parameters":{"type":"object",
    "properties":{"city":{"type":"string"},"days":{"type":"integer"},"scale":{"type":"number"},"exact":{"type":"boolean"},
    "where":{"type":"object"},"tags":{"type":"array"},"maybe":{"type":["integer","null"]},"note":{"type":"string"}}}}}])";
  const ChatTemplate t = ChatTemplate::builtin("muse-glimmer");
  const GenRequest r = parse_gen_request(std::string(R"({"messages":[{"role":"user","content":"weather?"},
      {"role":"assistant","content":"","reasoning_content":"Two cities, so two calls.","tool_calls":[
      {"id":"c1","type":"function","function":{"name":"get_weather","arguments":)") + nlohmann::json(args).dump() + R"(}},
      {"id":"c2","type":"function","function":{"name":"get_weather","arguments":)" + nlohmann::json(args2).dump() + R"(}}]}],
      "tools":)" + tools + "}", true);
  ChatRenderOptions o;
  o.tools_json = r.tools_json;
  o.add_generation_prompt = false;
  const std::string text = t.render(r.messages, o);
  // The model's part of the turn: after the generation prompt (<|start|>assistant), up to its
  // stop token (<|eot|>).
  const std::string turn = "<|start|>assistant to=self<|message|>";
  const size_t b = text.find(turn);
  ASSERT_NE(b, std::string::npos) << text;
  ASSERT_TRUE(text.ends_with("<|eot|>")) << text;
  const std::string reply = text.substr(b + 18, text.size() - 7 - (b + 18));
  std::vector<ChatMessage> user = {r.messages[0]};
  o.add_generation_prompt = true;
  const std::string prompt = t.render(user, o);
  ASSERT_TRUE(prompt.ends_with("<|start|>assistant")) << prompt;
  const ChatParseOptions pp = chat_parse_options(t.text(), r.tools_json, prompt);
  EXPECT_TRUE(pp.channels);
  EXPECT_EQ(pp.tools, ToolFormat::Atem);
  std::mt19937 rng(7);
  const ChatDelta w = whole(pp, reply);
  EXPECT_EQ(w.reasoning, "Two cities, so two calls.") << reply;
  EXPECT_EQ(w.content, "") << reply;
  ASSERT_EQ(w.calls.size(), 2u) << reply;
  EXPECT_EQ(w.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(w.calls[0].arguments), nlohmann::json::parse(args)) << w.calls[0].arguments;
  EXPECT_EQ(nlohmann::json::parse(w.calls[1].arguments), nlohmann::json::parse(args2));
  for (size_t cut : {0, 1, 3, 0}) expect_same(pieces(pp, reply, cut, rng), w, "cut " + std::to_string(cut));
  // Reasoning, then the answer; no tools offered: the same split.
  const ChatParseOptions np = chat_parse_options(t.text(), "", prompt);
  EXPECT_TRUE(np.channels);
  EXPECT_EQ(np.tools, ToolFormat::None);
  const std::string answer = " to=self<|message|>Say hello.<|eom|><|start|>assistant to=user<|message|>Hello <b>there</b>!";
  for (size_t cut : {0, 1, 2, 5}) {
    const ChatDelta d = pieces(np, answer, cut, rng);
    EXPECT_EQ(d.reasoning, "Say hello.");
    EXPECT_EQ(d.content, "Hello <b>there</b>!");
    EXPECT_TRUE(d.calls.empty());
  }
  // A tool message that is not an Atem block, or a call without tools offered: content as written.
  const std::string bad = " to=get_weather<|message|><atem:function_calls>\n<atem:invoke name=\"get_weather\">oops";
  EXPECT_EQ(whole(pp, bad).content, bad);
  const std::string call = reply.substr(reply.find(" to=get_weather"));
  const ChatDelta nc = whole(np, call);
  EXPECT_TRUE(nc.calls.empty());
  EXPECT_NE(nc.content.find("<atem:invoke name=\"get_weather\">"), std::string::npos) << nc.content;
  // No header: all content; a prompt without the generation prompt: no channels.
  EXPECT_EQ(whole(np, "Just text.").content, "Just text.");
  EXPECT_FALSE(chat_parse_options(t.text(), "", prompt + "x").channels);
  // tool_choice's grammar admits the template's own call of the schema's keys in its order, after
  // the reasoning message or without it, and not a call with a key out of order or an untyped value.
  const auto g = server::tool_call_grammar(ToolFormat::Atem, r.tools_json, "");
  ASSERT_NE(g, nullptr);
  const std::string second = reply.substr(reply.rfind(" to=get_weather"));  // {"city":"Tokyo"}
  const std::string first = reply.substr(0, reply.find("<|eom|>", reply.find(" to=get_weather")));
  EXPECT_TRUE(server::grammar_accepts(*g, second)) << second;
  EXPECT_TRUE(server::grammar_accepts(*g, first)) << first;
  EXPECT_TRUE(server::grammar_accepts(*g, first.substr(first.find(" to=get_weather")))) << first;
  std::string swapped = second;
  swapped.replace(swapped.find("city"), 4, "days");
  EXPECT_FALSE(server::grammar_accepts(*g, swapped)) << swapped;
  std::string untyped = first;
  untyped.replace(untyped.find(">3<"), 3, ">x<");
  EXPECT_FALSE(server::grammar_accepts(*g, untyped)) << untyped;
  EXPECT_EQ(server::tool_call_grammar(ToolFormat::Atem, r.tools_json, "no_such_tool"), nullptr);
}

TEST(ToolCalls, ResponseShapes) {
  ChatDelta d;
  d.reasoning = "r";
  d.calls.push_back({"abcdefghi", "f", "{\"a\":1}"});
  const auto m = chat_message_json(d);
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_EQ(m["reasoning_content"], "r");
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  ResponseIds ids;
  ids.chat = true;
  const auto ch = chat_delta_chunk(ids, d, 2, false, false, nullptr, nullptr);
  const auto& delta = ch["choices"][0]["delta"];
  EXPECT_FALSE(delta.contains("content"));
  EXPECT_EQ(delta["tool_calls"][0]["index"], 2);
  EXPECT_EQ(delta["tool_calls"][0]["id"], "abcdefghi");
  EXPECT_EQ(chat_finish_reason("stop", 1), "tool_calls");
  EXPECT_EQ(chat_finish_reason("length", 1), "length");
  EXPECT_EQ(chat_finish_reason("stop", 0), "stop");
  EXPECT_EQ(chat_message_json(ChatDelta{}).at("content"), "");
}

TEST(ToolCalls, RequestFields) {
  const GenRequest r = parse_gen_request(R"({"messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[{"id":"call00001","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"call00001","name":"get_weather","content":[{"type":"text","text":"18"}]}],
      "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","z":1,"a":2}}}],
      "tool_choice":{"type":"function","function":{"name":"get_weather"}},
      "enable_thinking":false,"reasoning_effort":"low","chat_template_kwargs":{"enable_thinking":true,"x":[1]}})",
                                         true);
  ASSERT_EQ(r.messages.size(), 3u);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].tool_calls[0].id, "call00001");
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(r.messages[1].reasoning_content.value_or(""), "think");
  EXPECT_EQ(r.messages[2].tool_call_id.value_or(""), "call00001");
  EXPECT_EQ(r.messages[2].content, "18");
  // The client's key order is kept (templates print tools with tojson).
  EXPECT_NE(r.tools_json.find(R"("z":1,"a":2)"), std::string::npos) << r.tools_json;
  EXPECT_EQ(r.tool_choice, "function");
  EXPECT_EQ(r.tool_choice_name, "get_weather");
  EXPECT_EQ(r.template_vars.at("enable_thinking"), "true");  // chat_template_kwargs wins
  EXPECT_EQ(r.template_vars.at("reasoning_effort"), "\"low\"");
  EXPECT_EQ(r.template_vars.at("x"), "[1]");
}

TEST(ToolCalls, BadToolFieldsAre400NamingTheField) {
  const std::string m = R"("messages":[{"role":"user","content":"x"}])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{" + m + R"(,"tools":{"type":"function"}})", "tools"},
      {"{" + m + R"(,"tools":[5]})", "tools[0]"},
      {"{" + m + R"(,"tools":[{"function":{"name":"f"}}]})", "tools[0].type"},
      {"{" + m + R"(,"tools":[{"type":"retrieval","function":{"name":"f"}}]})", "tools[0].type"},
      {"{" + m + R"(,"tools":[{"type":"function"}]})", "tools[0].function"},
      {"{" + m + R"(,"tools":[{"type":"function","function":{"description":"d"}}]})", "tools[0].function.name"},
      {"{" + m + R"(,"tools":[{"type":"function","function":{"name":""}}]})", "tools[0].function.name"},
      {"{" + m + R"(,"tools":[{"type":"function","function":{"name":"a b"}}]})", "tools[0].function.name"},
      {"{" + m + R"(,"tools":[{"type":"function","function":{"name":"f","parameters":"{}"}}]})", "tools[0].function.parameters"},
      {"{" + m + R"(,"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]})", "tools[0].function.parameters"},
      {"{" + m + R"(,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]})",
       "tools[1].function.name"},
      {"{" + m + R"(,"tools":[{"type":"function","function":{"name":"f","description":7}}]})", "tools[0].function.description"},
      {"{" + m + R"(,"tool_choice":"maybe"})", "tool_choice"},
      {"{" + m + R"(,"tool_choice":"required"})", "tool_choice"},
      {"{" + m + R"(,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}})",
       "tool_choice.function.name"},
      {"{" + m + R"(,"tool_choice":5})", "tool_choice"},
      {"{" + m + R"(,"enable_thinking":"yes"})", "enable_thinking"},
      {"{" + m + R"(,"reasoning_effort":"max"})", "reasoning_effort"},
      {"{" + m + R"(,"chat_template_kwargs":[1]})", "chat_template_kwargs"},
      {"{" + m + R"(,"chat_template_kwargs":{"messages":[]}})", "chat_template_kwargs.messages"},
      {"{" + m + R"(,"chat_template_kwargs":{"a-b":1}})", "chat_template_kwargs.a-b"},
      {R"({"messages":[{"role":"assistant","tool_calls":{}}]})", "messages[0].tool_calls"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"id":"1"}]}]})", "messages[0].tool_calls[0].function"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]}]})",
       "messages[0].tool_calls[0].function.name"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"type":"x","function":{"name":"f"}}]}]})", "messages[0].tool_calls[0].type"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":5}}]}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {R"({"messages":[{"role":"user","content":"x","tool_calls":[]}]})", "messages[0].tool_calls"},
      {R"({"messages":[{"role":"tool","content":"x","tool_call_id":5}]})", "messages[0].tool_call_id"},
      {R"({"messages":[{"role":"function","content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"tool","content":[{"type":"input_audio"}]}]})", "messages[0].content[0].type"},
  };
  for (const auto& [body, param] : cases) {
    try {
      parse_gen_request(body, true);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << body;
      EXPECT_EQ(e.param, param) << body << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(param), std::string::npos) << e.what();
      const auto j = error_json(e);
      EXPECT_EQ(j["error"]["param"], param);
      EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    }
  }
}

}  // namespace nvfp4::server

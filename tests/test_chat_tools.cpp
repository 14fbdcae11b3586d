// Chat templates with tools, tool calls, tool results and reasoning against transformers' own
// renderer: every case of fixtures/chat_templates/expected_tools.json (written by
// tools/gen_chat_tool_fixtures.py with render_jinja_template(..., tools=...)) rendered here and
// compared byte for byte; the cases transformers raises on raise here. Plus the JSON edges.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "nvfp4/chat.h"
#include "nvfp4/error.h"
#include "test_util.h"

using namespace nvfp4;

namespace {
std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A message as an OpenAI client sends it (the server's request parser builds the same).
ChatMessage message_of(const nlohmann::json& m) {
  ChatMessage cm;
  cm.role = m["role"];
  if (m["content"].is_string()) cm.content = m["content"];
  if (m.contains("tool_calls"))
    for (const auto& c : m["tool_calls"])
      cm.tool_calls.push_back({c["id"], c["function"]["name"], c["function"]["arguments"]});
  if (m.contains("tool_call_id")) cm.tool_call_id = m["tool_call_id"].get<std::string>();
  if (m.contains("name")) cm.name = m["name"].get<std::string>();
  if (m.contains("reasoning_content")) cm.reasoning_content = m["reasoning_content"].get<std::string>();
  return cm;
}
}  // namespace

TEST(ChatTools, ByteEqualToTransformers) {
  const auto j = nlohmann::ordered_json::parse(slurp(test::fixture_path("chat_templates/expected_tools.json")));
  std::map<std::string, ChatTemplate> templates;
  for (const auto& [name, t] : j["templates"].items())
    templates.emplace(name, ChatTemplate::parse(slurp(test::fixture_path("chat_templates/" + t["file"].get<std::string>())),
                                                t["file"].get<std::string>()));
  ASSERT_GE(templates.size(), 10u);
  std::map<std::string, int> equal;
  int raised = 0, with_tools = 0;
  for (const auto& c : j["cases"]) {
    const std::string name = c["template"];
    const auto& t = j["templates"][name];
    const auto& conv = j["conversations"][c["conversation"].get<std::string>()];
    std::vector<ChatMessage> msgs;
    for (const auto& m : conv["messages"]) msgs.push_back(message_of(nlohmann::json::parse(m.dump())));
    ChatRenderOptions o;
    o.add_generation_prompt = c["add_generation_prompt"];
    o.bos_token = t["bos_token"];
    o.eos_token = t["eos_token"];
    if (!conv["tools"].is_null()) o.tools_json = conv["tools"].dump();  // key order kept (ordered_json)
    for (const auto& [k, v] : c["extra"].items()) o.json_vars[k] = v.dump();
    const std::string date = c["date"];
    o.date = ChatDate{std::stoi(date.substr(0, 4)), std::stoi(date.substr(5, 2)), std::stoi(date.substr(8, 2))};
    const std::string what = name + " / " + c["conversation"].get<std::string>() +
                             (o.add_generation_prompt ? " +gen" : "") + " " + c["extra"].dump();
    if (c.contains("error")) {
      const std::string err = c["error"];
      try {
        templates.at(name).render(msgs, o);
        ADD_FAILURE() << what << ": rendered, transformers raised " << err;
      } catch (const Error& e) {
        // raise_exception's message is the template's own: the same words here.
        if (err.rfind("TemplateError: ", 0) == 0) {
          EXPECT_NE(std::string(e.what()).find(err.substr(15)), std::string::npos) << what << ": " << e.what();
        }
        ++raised;
      }
      continue;
    }
    try {
      const std::string got = templates.at(name).render(msgs, o);
      EXPECT_EQ(got, c["text"].get<std::string>()) << what;
      if (got == c["text"].get<std::string>()) {
        ++equal[name];
        if (!conv["tools"].is_null()) ++with_tools;
      }
    } catch (const Error& e) {
      ADD_FAILURE() << what << ": " << e.what();
    }
  }
  for (const auto& [name, t] : templates) {
    (void)t;
    EXPECT_GE(equal[name], 12) << name;
  }
  EXPECT_GE(raised, 6);
  EXPECT_GE(with_tools, 150);
}

TEST(ChatTools, TemplatesSeeTools) {
  const auto t = ChatTemplate::parse(
      "{% for t in tools %}{{ t.function.name }}:{{ t.function.parameters | tojson }};{% endfor %}"
      "{% for m in messages %}{% for c in m.tool_calls %}{{ c.id }}={{ c.function.arguments.city }}{% endfor %}"
      "{{ m.tool_call_id }}{% endfor %}{{ tool_choice }}",
      "test");
  EXPECT_TRUE(t.takes_tools());
  ChatRenderOptions o;
  o.tools_json = R"([{"type":"function","function":{"name":"f","parameters":{"z":1,"a":[1.5,true,null]}}}])";
  o.json_vars["tool_choice"] = R"("auto")";
  ChatMessage a{"assistant", ""};
  a.tool_calls.push_back({"abc", "f", R"({"city": "Paris"})"});
  ChatMessage r{"tool", "18"};
  r.tool_call_id = "abc";
  // Key order is the request's (json.dumps keeps insertion order), floats as Python prints them.
  EXPECT_EQ(t.render({a, r}, o), R"(f:{"z": 1, "a": [1.5, true, null]};abc=Parisabcauto)");
  EXPECT_FALSE(ChatTemplate::parse("{{ messages[0].content }}", "t").takes_tools());
}

TEST(ChatTools, ArgumentsThatAreNotAnObjectStayText) {
  const auto t = ChatTemplate::parse("{% for c in messages[0].tool_calls %}{{ c.function.arguments is string }}|{% endfor %}", "t");
  ChatMessage a{"assistant", ""};
  a.tool_calls.push_back({"1", "f", "not json"});
  a.tool_calls.push_back({"2", "f", "[1, 2]"});
  a.tool_calls.push_back({"3", "f", "{\"k\": 1}"});
  EXPECT_EQ(t.render({a}, {}), "True|True|False|");
}

TEST(ChatTools, BadJsonIsRefusedNamingIt) {
  const auto t = ChatTemplate::parse("{{ tools }}", "tmpl");
  ChatRenderOptions o;
  o.tools_json = "[{\"a\": ";
  try {
    t.render({{"user", "hi"}}, o);
    FAIL() << "rendered malformed tools";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tools"), std::string::npos) << e.what();
  }
  o.tools_json = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THROW(t.render({{"user", "hi"}}, o), Error);
  o.tools_json = "[18446744073709551615]";
  EXPECT_THROW(t.render({{"user", "hi"}}, o), Error);
  o.tools_json = "[\"\xff\"]";
  EXPECT_THROW(t.render({{"user", "hi"}}, o), Error);
  o.tools_json.clear();
  o.json_vars["messages"] = "1";  // a kwarg may not replace what the renderer sets
  EXPECT_THROW(t.render({{"user", "hi"}}, o), Error);
}

TEST(ChatTools, TemplateKwargsFromTheCommandLine) {
  const auto kw = chat_template_kwargs(R"({"enable_thinking": false, "preserve_thinking": true, "x": [1, "a"]})", "--flag");
  EXPECT_EQ(kw.at("enable_thinking"), "false");
  EXPECT_EQ(kw.at("preserve_thinking"), "true");
  EXPECT_EQ(kw.at("x"), R"([1,"a"])");
  const auto t = ChatTemplate::builtin("qwen3.5");
  ChatRenderOptions o;
  o.json_vars = kw;
  const std::string p = t.render({{"user", "hi"}}, o);
  EXPECT_EQ(p, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  for (const char* bad : {"[1]", "{", "{\"a-b\": 1}", "{\"1a\": 1}", "\"x\"", ""}) {
    try {
      chat_template_kwargs(bad, "--flag");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--flag"), std::string::npos) << e.what();
    }
  }
}

// Qwen3.5/3.6 iterate a call's arguments with |items: arguments that are not a JSON object (kept
// as text) make the template fail as jinja2 fails there, an Error (the server's 400), not a crash.
TEST(ChatTools, QwenTemplatesRefuseArgumentsThatAreNotAnObject) {
  for (const char* name : {"qwen3.5", "qwen3.6"}) {
    const auto t = ChatTemplate::builtin(name);
    ChatMessage u{"user", "hi"};
    ChatMessage a{"assistant", ""};
    a.tool_calls.push_back({"1", "f", "[1, 2]"});
    EXPECT_THROW(t.render({u, a}, {}), Error) << name;
    a.tool_calls[0].arguments = "{\"k\": [1, {\"x\": null}]}";
    const std::string ok = t.render({u, a}, {});
    EXPECT_NE(ok.find("<parameter=k>\n[1, {\"x\": null}]\n</parameter>"), std::string::npos) << ok;
  }
}

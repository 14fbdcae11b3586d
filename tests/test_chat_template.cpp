// The Jinja chat-template interpreter against transformers' own renderer: every case of
// fixtures/chat_templates/expected.json (written by tools/gen_chat_template_fixtures.py with
// transformers.utils.chat_template_utils.render_jinja_template) rendered here and compared byte
// for byte; the cases transformers raises on raise here. Plus the built-in templates, refusals
// of unsupported constructs, and the runaway limits.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "nvfp4/chat.h"
#include "nvfp4/error.h"
#include "test_util.h"
#include "text/chat_builtin.h"

using namespace nvfp4;

namespace {
std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
nlohmann::json expected() {
  return nlohmann::json::parse(read_file(test::fixture_path("chat_templates/expected.json")));
}
std::string render(const std::string& tmpl, const std::vector<ChatMessage>& m = {{"user", "hi"}},
                   const ChatRenderOptions& o = {}) {
  return ChatTemplate::parse(tmpl, "test").render(m, o);
}
}  // namespace

TEST(ChatTemplate, ByteEqualToTransformers) {
  const auto j = expected();
  std::map<std::string, ChatTemplate> templates;
  for (const auto& [name, t] : j["templates"].items())
    templates.emplace(name, ChatTemplate::parse(read_file(test::fixture_path("chat_templates/" + t["file"].get<std::string>())),
                                                t["file"].get<std::string>()));
  ASSERT_GE(templates.size(), 8u);
  std::map<std::string, int> equal, raised;
  for (const auto& c : j["cases"]) {
    const std::string name = c["template"];
    const auto& t = j["templates"][name];
    std::vector<ChatMessage> msgs;
    for (const auto& m : c["messages"]) {
      // Content parts are joined, as the server joins a request's text parts.
      std::string content;
      if (m["content"].is_string()) content = m["content"];
      else
        for (const auto& p : m["content"]) content += p["text"].get<std::string>();
      msgs.push_back({m["role"], content});
    }
    ChatRenderOptions o;
    o.add_generation_prompt = c["add_generation_prompt"];
    o.bos_token = t["bos_token"];
    o.eos_token = t["eos_token"];
    for (const auto& [k, v] : c["extra"].items()) {
      if (v.is_boolean()) o.vars[k] = v.get<bool>();
      else o.vars[k] = v.get<std::string>();
    }
    const std::string date = c["date"];
    o.date = ChatDate{std::stoi(date.substr(0, 4)), std::stoi(date.substr(5, 2)), std::stoi(date.substr(8, 2))};
    const std::string what = name + " / " + c["conversation"].get<std::string>() +
                             (o.add_generation_prompt ? " +gen" : "") + " " + c["extra"].dump();
    if (c.contains("error")) {
      try {
        templates.at(name).render(msgs, o);
        ADD_FAILURE() << what << ": rendered, transformers raised " << c["error"];
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos) << what << ": " << e.what();
        ++raised[name];
      }
      continue;
    }
    try {
      const std::string got = templates.at(name).render(msgs, o);
      EXPECT_EQ(got, c["text"].get<std::string>()) << what;
      if (got == c["text"].get<std::string>()) ++equal[name];
    } catch (const Error& e) {
      ADD_FAILURE() << what << ": " << e.what();
    }
  }
  for (const auto& [name, t] : templates) {
    (void)t;
    EXPECT_GT(equal[name], 10) << name;
    std::cout << "[ chat     ] " << name << ": byte-equal on " << equal[name] << " cases, raised on " << raised[name]
              << " as transformers\n";
  }
}

TEST(ChatTemplate, SnippetsByteEqualToTransformers) {
  const auto j = expected();
  std::vector<ChatMessage> msgs;
  for (const auto& m : j["snippet_messages"]) msgs.push_back({m["role"], m["content"]});
  ChatRenderOptions o;
  o.bos_token = "<s>";
  o.eos_token = "</s>";
  size_t equal = 0, raised = 0;
  ASSERT_GE(j["snippets"].size(), 100u);
  for (const auto& c : j["snippets"]) {
    const std::string t = c["template"];
    try {
      const std::string got = ChatTemplate::parse(t, "snippet").render(msgs, o);
      if (c.contains("error")) ADD_FAILURE() << t << ": rendered '" << got << "', transformers raised " << c["error"];
      else if (got == c["text"].get<std::string>()) ++equal;
      else ADD_FAILURE() << t << ": '" << got << "' != '" << c["text"].get<std::string>() << "'";
    } catch (const Error& e) {
      if (c.contains("error")) ++raised;
      else ADD_FAILURE() << t << ": " << e.what();
    }
  }
  std::cout << "[ chat     ] snippets: byte-equal on " << equal << ", raised on " << raised << " as transformers\n";
}

TEST(ChatTemplate, BuiltinsAreTheFixtureTexts) {
  const auto names = ChatTemplate::builtin_names();
  for (const char* need : {"chatml", "llama3", "mistral", "qwen3", "qwen3.5", "qwen3.6", "gemma2", "gemma4", "deepseek-r1", "phi3", "smollm2", "nemotron3"})
    EXPECT_NE(std::find(names.begin(), names.end(), need), names.end()) << need;
  const auto j = expected();
  // Every built-in is its fixture file byte for byte (CMake embeds them: builtins.txt).
  const auto all = builtin_chat_templates();
  EXPECT_EQ(all.size(), names.size());
  for (const auto& b : all)
    EXPECT_EQ(ChatTemplate::builtin(b.name).text(), read_file(test::fixture_path("chat_templates/" + b.fixture))) << b.name;
  // A template read from elsewhere is told apart from, or matched to, a built-in by its text (the
  // load logs say which).
  const ChatTemplate own = ChatTemplate::parse(read_file(test::fixture_path("chat_templates/nemotron-3-nano.jinja")), "x.gguf");
  EXPECT_EQ(own.builtin_name(), "nemotron3");
  EXPECT_EQ(own.describe(), "from x.gguf (the text of built-in 'nemotron3')");
  EXPECT_EQ(ChatTemplate::parse(own.text() + " ", "y").builtin_name(), "");
  EXPECT_EQ(ChatTemplate::builtin("qwen3.5").describe(), "built-in chat template 'qwen3.5'");
  try {
    ChatTemplate::builtin("no-such-template");
    ADD_FAILURE() << "unknown builtin accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama3"), std::string::npos) << e.what();  // lists the known names
  }
}

TEST(ChatTemplate, RefusesUnsupportedConstructsWithLine) {
  for (const char* t : {"{% include 'x' %}", "{% extends 'x' %}", "{% import 'x' as y %}", "{% raw %}{% endraw %}",
                        "{% for x in y recursive %}{% endfor %}", "{% do x %}", "{% filter upper %}x{% endfilter %}",
                        "a\n{{ x | sort }}", "{{ x is foo }}", "{% if x %}", "{{ (1 }}", "{{ 'a' }", "{# never closed",
                        "{% break %}", "{{ f(*x) }}"}) {
    try {
      render(t);
      ADD_FAILURE() << "accepted: " << t;
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), "test") << t;
      EXPECT_NE(e.rule().find("line "), std::string::npos) << e.what();
    }
  }
  try {
    render("ok\n\n{{ x | sort }}");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sort"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, RaiseExceptionNamesTemplateAndMessage) {
  try {
    render("{{ raise_exception('no system role') }}");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "test");
    EXPECT_NE(std::string(e.what()).find("no system role"), std::string::npos);
  }
}

TEST(ChatTemplate, UndefinedAsJinja) {
  EXPECT_EQ(render("[{{ nope }}][{{ nope | length }}][{{ nope is defined }}][{{ nope ~ 'x' }}]"), "[][0][False][x]");
  EXPECT_EQ(render("{% for x in nope %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_THROW(render("{{ nope.attr }}"), Error);
  EXPECT_THROW(render("{{ nope + 'x' }}"), Error);
  EXPECT_THROW(render("{{ nope() }}"), Error);
  EXPECT_EQ(render("{{ messages[0].nope is defined }}|{{ messages[5] is defined }}"), "False|False");
}

TEST(ChatTemplate, PythonValueSemantics) {
  EXPECT_EQ(render("{{ [1, 'a', none, true, 1.5, {'k': [2]}] }}"), "[1, 'a', None, True, 1.5, {'k': [2]}]");
  EXPECT_EQ(render("{{ {'a': 'it\\'s', 'b': \"\\n\"} | tojson }}"), "{\"a\": \"it's\", \"b\": \"\\n\"}");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 == 1.0 }}"),
            "3 -4 2 3.5 1024 True");
  EXPECT_EQ(render("{{ 'abc'[::-1] }}{{ [1,2,3][1:] }}{{ 'héllo'[1] }}"), "cba[2, 3]é");
  EXPECT_EQ(render("{{ ' a b '.split() }}{{ 'a,b,,c'.split(',') }}{{ 'x'.strip('x') == '' }}"),
            "['a', 'b']['a', 'b', '', 'c']True");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(5) if i is odd %}{% set ns.n = ns.n + i %}"
                   "{{ loop.index }}/{{ loop.length }}{% if not loop.last %},{% endif %}{% endfor %}={{ ns.n }}"),
            "1/2,2/2=4");
  EXPECT_EQ(render("{% macro m(a, b='B') %}<{{ a }}{{ b }}>{% endmacro %}{{ m('x') }}{{ m('y', b='z') }}"), "<xB><yz>");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(render("{{ 'x' if false }}|{{ 'y' if 0 else 'z' }}|{{ none }}|{{ 1 < 2 < 3 }}"), "|z|None|True");
}

TEST(ChatTemplate, WhitespaceControlAsTransformers) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it goes.
  EXPECT_EQ(render("{% if true %}\n  a\n  {% endif %}\nb"), "  a\nb");
  EXPECT_EQ(render("x  {%- if true -%}  y  {%- endif -%}  z"), "xyz");
  EXPECT_EQ(render("a\n{{ 'v' }}\nb\n"), "a\nv\nb");  // one trailing newline dropped
  EXPECT_EQ(render("a {#- c -#} b"), "ab");
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
}

TEST(ChatTemplate, LimitsStopRunawayTemplates) {
  ChatRenderOptions o;
  o.max_steps = 100000;
  EXPECT_THROW(render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", {}, o), Error);
  o.max_output = 1000;
  EXPECT_THROW(render("{{ 'x' * 5000 }}", {}, o), Error);
  EXPECT_THROW(render("{% for i in range(2000) %}ab{% endfor %}", {}, o), Error);
  EXPECT_THROW(render("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}"), Error);
  EXPECT_THROW(render("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), Error);
}

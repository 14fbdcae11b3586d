#!/usr/bin/env python3
"""Renders fixtures/chat_templates/*.jinja with tools, tool calls, tool results and reasoning
through transformers' own renderer (render_jinja_template, what apply_chat_template(...,
tools=...) calls) and writes fixtures/chat_templates/expected_tools.json.

Messages are stored as an OpenAI client sends them (tool call arguments as JSON text). They are
given to transformers as nvfp4 gives them to the template: arguments parsed to a dict (vLLM does
the same), except for templates that concatenate arguments as a string (DeepSeek R1's), which get
the text; a null content (an assistant turn of tool calls alone) is given as "", as vLLM gives it
(transformers' templates fail on None: `'...' + message.content`). strftime_now is pinned as in gen_chat_template_fixtures.py.

    python tools/gen_chat_tool_fixtures.py   (PyPI transformers and jinja2; no torch)
"""
import copy
import datetime
import json
import os

import jinja2
import transformers
from transformers.utils import chat_template_utils as ctu

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DIR = os.path.join(ROOT, "fixtures", "chat_templates")
DATE = datetime.date(2025, 3, 9)

TEMPLATES = {
    "qwen3": ("", "<|im_end|>"),
    "qwen3.5": ("", "<|im_end|>"),
    "qwen3.5-small": ("", "<|im_end|>"),
    "qwen3.6": ("", "<|im_end|>"),
    "qwq-32b": ("", "<|im_end|>"),
    "qwen2.5": ("", "<|im_end|>"),
    "hermes3-tool-use": ("<|begin_of_text|>", "<|im_end|>"),
    "llama3.1": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3.2": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistral-nemo": ("<s>", "</s>"),
    "mistral-small-3.2": ("<s>", "</s>"),
    "nemotron-nano-v2": ("", "<SPECIAL_12>"),
    "nemotron-3-nano": ("", "<|im_end|>"),
    "gemma4": ("<bos>", "<eos>"),
    "muse-glimmer": ("<|begin_of_text|>", "<|end_of_text|>"),
    "deepseek-r1-distill-qwen": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "chatml": ("", "<|im_end|>"),
}

WEATHER = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Current weather in a city. Unicode: héllo 世界 \"quoted\"",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string", "description": "City name"},
                                  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                                           "description": "Temperature unit"},
                                  "days": {"type": "integer", "description": "Days ahead", "minimum": 0}},
                   "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search_web",
    "description": "Search the web.",
    "parameters": {"type": "object",
                   "properties": {"query": {"type": "string", "description": "What to look for"},
                                  "limit": {"type": "number", "description": "At most this many", "default": 2.5}},
                   "required": ["query"]}}}
TOOLS = [WEATHER, SEARCH]

S = {"role": "system", "content": "You are a helpful assistant."}
U = {"role": "user", "content": "What is the weather in Paris?"}
U2 = {"role": "user", "content": "And in Tokyo?"}


def call(i, name, args):
    return {"id": f"call{i:05d}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}


C1 = call(1, "get_weather", {"city": "Paris", "unit": "celsius"})
C2 = call(2, "search_web", {"query": "Paris événements", "limit": 3})
A_CALL = {"role": "assistant", "content": None, "tool_calls": [C1]}
A_CALL_TEXT = {"role": "assistant", "content": "Let me check.", "tool_calls": [C1]}
A_TWO = {"role": "assistant", "content": None, "tool_calls": [C1, C2]}
C3 = call(3, "search_web", {"query": "musées", "limit": 2.5, "safe": True, "filters": {"lang": "fr", "sites": ["a.fr", "b.fr"]},
                            "note": None})
A_NESTED = {"role": "assistant", "content": "Searching.", "reasoning_content": "Need museums.", "tool_calls": [C3]}
T1 = {"role": "tool", "content": "{\"temperature\": 18, \"sky\": \"clear\"}", "tool_call_id": "call00001",
      "name": "get_weather"}
T2 = {"role": "tool", "content": "Fête de la musique", "tool_call_id": "call00002", "name": "search_web"}
A_ANSWER = {"role": "assistant", "content": "It is 18 °C and clear in Paris."}
A_REASON = {"role": "assistant", "content": "It is 18 °C.", "reasoning_content": "The tool said 18."}

CONVERSATIONS = {
    "tools_system_user": ([S, U], TOOLS),
    "tools_user_only": ([U], TOOLS),
    "tools_call_result": ([U, A_CALL, T1], TOOLS),
    "tools_call_with_text": ([S, U, A_CALL_TEXT, T1], TOOLS),
    "tools_two_calls": ([U, A_TWO, T1, T2], TOOLS),
    "tools_full_loop": ([S, U, A_CALL, T1, A_ANSWER, U2], TOOLS),
    "history_without_tools": ([U, A_CALL, T1, A_ANSWER, U2], None),
    "reasoning_in_history": ([U, A_REASON, U2], None),
    "reasoning_after_tools": ([U, A_CALL, T1, A_REASON, U2], TOOLS),
    "nested_arguments": ([U, A_NESTED, T2], TOOLS),
}
EXTRAS = {"qwen3": [{}, {"enable_thinking": False}],
          "qwen3.5": [{}, {"enable_thinking": False}],
          "qwen3.5-small": [{}, {"enable_thinking": True}],
          "qwen3.6": [{}, {"enable_thinking": False}, {"preserve_thinking": True}],
          "nemotron-nano-v2": [{}, {"enable_thinking": False}],
          "nemotron-3-nano": [{}, {"enable_thinking": False}, {"truncate_history_thinking": False}],
          "gemma4": [{}, {"enable_thinking": True}],
          "muse-glimmer": [{}, {"reasoning_strength": "medium"}]}
# As in gen_chat_template_fixtures.py: a derived template renders what its origin renders.
ORIGINS = {"muse-glimmer": "sources/muse_glimmer_training.jinja"}


def wants_text_arguments(template):
    return "['arguments'] +" in template or ".arguments +" in template


def as_given(messages, text_args):
    out = copy.deepcopy(messages)
    for m in out:
        if m["content"] is None:
            m["content"] = ""  # null content (tool calls alone) is given as "", as vLLM gives it
        if not text_args:
            for c in m.get("tool_calls", []):
                c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    return out


def render(template, messages, tools, agp, bos, eos, extra):
    compiled = ctu._compile_jinja_template(template)
    compiled.environment.globals["strftime_now"] = lambda fmt: DATE.strftime(fmt)
    out, _ = ctu.render_jinja_template(conversations=[messages], tools=tools, chat_template=template,
                                       add_generation_prompt=agp, bos_token=bos, eos_token=eos, **extra)
    return out[0]


def main():
    cases, templates = [], {}
    for name, (bos, eos) in TEMPLATES.items():
        with open(os.path.join(DIR, name + ".jinja"), encoding="utf-8", newline="") as f:
            text = f.read()
        templates[name] = {"file": name + ".jinja", "bos_token": bos, "eos_token": eos}
        for conv, (msgs, tools) in CONVERSATIONS.items():
            for agp in (False, True):
                for extra in EXTRAS.get(name, [{}]):
                    case = {"template": name, "conversation": conv, "add_generation_prompt": agp, "extra": extra, "date": DATE.isoformat()}
                    try:
                        case["text"] = render(text, as_given(msgs, wants_text_arguments(text)), tools, agp,
                                              bos, eos, extra)
                    except (jinja2.exceptions.TemplateError, TypeError) as e:
                        case["error"] = type(e).__name__ + ": " + str(e)
                    if name in ORIGINS:
                        with open(os.path.join(DIR, ORIGINS[name]), encoding="utf-8", newline="") as f:
                            origin = f.read()
                        try:
                            same = render(origin, as_given(msgs, wants_text_arguments(text)), tools, agp, bos, eos,
                                          extra) == case.get("text")
                        except (jinja2.exceptions.TemplateError, TypeError):
                            same = "error" in case
                        if not same:
                            raise SystemExit(f"{name} differs from its origin {ORIGINS[name]} on {conv}")
                    cases.append(case)
    out = {"generator": "tools/gen_chat_tool_fixtures.py", "transformers": transformers.__version__,
           "jinja2": jinja2.__version__, "templates": templates,
           "conversations": {k: {"messages": m, "tools": t} for k, (m, t) in CONVERSATIONS.items()},
           "cases": cases}
    with open(os.path.join(DIR, "expected_tools.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    n_err = sum("error" in c for c in cases)
    print(f"{len(cases)} cases ({n_err} raise) over {len(templates)} templates")


if __name__ == "__main__":
    main()

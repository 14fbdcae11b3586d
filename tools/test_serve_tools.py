#!/usr/bin/env python3
"""`nvfp4 serve` with tools and reasoning against the official OpenAI Python client (PyPI `openai`).

    python tools/test_serve_tools.py build/nvfp4 MODEL.gguf [--quantize]

MODEL is the bundled SmolLM2-135M-Instruct. Three servers in turn:
1. Its own chat template, which does not use `tools` (transformers renders it the same with or
   without them): a request with tools is answered as text (tool_calls None, finish "stop" or
   "length"), a tool result turn renders and is answered, and bad tool fields are 400s naming the
   field in OpenAI's shape (BadRequestError.body["param"]).
2. `--chat-template qwen3` (Qwen3's template: the model shares ChatML's tokens): two earlier turns in
   which the assistant called get_weather make greedy SmolLM2 call it again, in Qwen's
   `<tool_call>` format: parsed into tool_calls (finish "tool_calls"), streamed as deltas that
   accumulate to the same call; the tool's result sent back in a `tool` message and the answer
   given as text (an agent loop); enable_thinking reaches the template (the prompt's size changes).
3. `--chat-template qwq` (QwQ-32B's: its generation prompt ends with "<think>\\n"): what the model says
   is reasoning_content until "</think>", whole and streamed alike.
Exit 0 when every check passes.
"""
import json
import os
import sys

import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import bad_request as refused, client, stop  # noqa: E402
from test_serve_openai import start  # noqa: E402

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def call(i, city):
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": f"call0000{i}", "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}]}


def user(city):
    return {"role": "user", "content": f"What is the weather in {city}?"}


FEW_SHOT = [user("Paris"), call(1, "Paris"), user("Rome"), call(2, "Rome"), user("Berlin")]


def stream(c, **kw):
    """The chunks of a streamed chat, accumulated as agents do: text, reasoning, calls by index."""
    content, reasoning, calls, finish = "", "", {}, None
    for ch in c.chat.completions.create(stream=True, **kw):
        if not ch.choices:
            continue
        d = ch.choices[0].delta
        content += d.content or ""
        reasoning += getattr(d, "reasoning_content", None) or (d.model_extra or {}).get("reasoning_content") or ""
        for tc in d.tool_calls or []:
            e = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            e["id"] += tc.id or ""
            e["name"] += (tc.function.name or "") if tc.function else ""
            e["arguments"] += (tc.function.arguments or "") if tc.function else ""
        finish = ch.choices[0].finish_reason or finish
    return content, reasoning, [calls[i] for i in sorted(calls)], finish


def bad_request(c, param, **kw):
    return refused(lambda: c.chat.completions.create(model="m", max_tokens=4, **kw), param)


def own_template(binary, model, extra):
    checks = 0
    p, port = start(binary, model, extra, parallel=2)
    try:
        c = client(port)
        r = c.chat.completions.create(model="m", messages=[user("Paris")], tools=TOOLS, max_tokens=16, temperature=0)
        assert r.choices[0].message.tool_calls is None and r.choices[0].message.content, r
        assert r.choices[0].finish_reason in ("stop", "length"), r
        plain = c.chat.completions.create(model="m", messages=[user("Paris")], max_tokens=16, temperature=0)
        # The template does not use tools: the same prompt, the same answer.
        assert plain.usage.prompt_tokens == r.usage.prompt_tokens, (plain.usage, r.usage)
        assert plain.choices[0].message.content == r.choices[0].message.content
        checks += 2
        loop = [user("Paris"), call(1, "Paris"), {"role": "tool", "tool_call_id": "call00001", "content": "18 C"}]
        r = c.chat.completions.create(model="m", messages=loop, tools=TOOLS, max_tokens=16, temperature=0)
        assert r.choices[0].message.content and r.usage.prompt_tokens > plain.usage.prompt_tokens, r
        checks += 1
        m = [user("Paris")]
        checks += bad_request(c, "tools", messages=m, tools={"type": "function"})
        checks += bad_request(c, "tools[0].function.name", messages=m, tools=[{"type": "function", "function": {}}])
        checks += bad_request(c, "tools[0].function.parameters", messages=m,
                              tools=[{"type": "function", "function": {"name": "f", "parameters": "{}"}}])
        checks += bad_request(c, "tool_choice", messages=m, tool_choice="required")
        checks += bad_request(c, "messages[0].role", messages=[{"role": "wizard", "content": "x"}])
        checks += bad_request(c, "messages[0].content[0].type",
                              messages=[{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}])
        checks += bad_request(c, "messages[1].tool_calls[0].function",
                              messages=[user("x"), {"role": "assistant", "tool_calls": [{"id": "a", "type": "function"}]}])
        checks += bad_request(c, "chat_template_kwargs.messages", messages=m,
                              extra_body={"chat_template_kwargs": {"messages": []}})
    finally:
        stop(p)
    return checks


def qwen3_template(binary, model, extra):
    checks = 0
    p, port = start(binary, model, extra + ["--chat-template", "qwen3"], parallel=2)
    try:
        c = client(port)
        r = c.chat.completions.create(model="m", messages=FEW_SHOT, tools=TOOLS, max_tokens=48, temperature=0)
        ch = r.choices[0]
        assert ch.finish_reason == "tool_calls", r
        assert ch.message.content is None, r
        assert len(ch.message.tool_calls) == 1, r
        tc = ch.message.tool_calls[0]
        assert tc.type == "function" and tc.function.name == "get_weather", tc
        assert json.loads(tc.function.arguments) == {"city": "Berlin"}, tc
        assert len(tc.id) == 9 and tc.id.isalnum(), tc
        checks += 1
        content, reasoning, calls, finish = stream(c, model="m", messages=FEW_SHOT, tools=TOOLS, max_tokens=48,
                                                   temperature=0)
        assert finish == "tool_calls" and content == "" and reasoning == "", (content, reasoning, finish)
        assert [(x["name"], json.loads(x["arguments"])) for x in calls] == [("get_weather", {"city": "Berlin"})], calls
        assert len(calls[0]["id"]) == 9, calls
        checks += 1
        # tool_choice "none": the template is not given the tools, nothing is parsed.
        r = c.chat.completions.create(model="m", messages=FEW_SHOT, tools=TOOLS, tool_choice="none", max_tokens=48,
                                      temperature=0)
        assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason != "tool_calls", r
        checks += 1
        # The agent loop: the call and its result go back; the model answers in text.
        turn = FEW_SHOT + [ch.message.model_dump(exclude_none=True),
                           {"role": "tool", "tool_call_id": tc.id, "content": "{\"temperature\": 21}"}]
        r = c.chat.completions.create(model="m", messages=turn, tools=TOOLS, max_tokens=24, temperature=0)
        assert r.choices[0].message.content or r.choices[0].message.tool_calls, r
        checks += 1
        # enable_thinking reaches the template: Qwen3's generation prompt gains an empty think block.
        sizes = [c.chat.completions.create(model="m", messages=[user("Paris")], max_tokens=1, temperature=0,
                                           extra_body=kw).usage.prompt_tokens
                 for kw in ({}, {"chat_template_kwargs": {"enable_thinking": False}}, {"enable_thinking": False})]
        assert sizes[1] == sizes[2] > sizes[0], sizes
        checks += 1
    finally:
        stop(p)
    return checks


def qwq_template(binary, model, extra):
    p, port = start(binary, model, extra + ["--chat-template", "qwq"], parallel=2)
    try:
        c = client(port)
        r = c.chat.completions.create(model="m", messages=[user("Paris")], max_tokens=24, temperature=0)
        m = r.choices[0].message
        reasoning = (m.model_extra or {}).get("reasoning_content", "")
        assert reasoning, r
        content, streamed_reasoning, calls, _ = stream(c, model="m", messages=[user("Paris")], max_tokens=24,
                                                       temperature=0)
        assert (content, streamed_reasoning, calls) == (m.content, reasoning, []), (content, streamed_reasoning, m)
    finally:
        stop(p)
    return 2


def main():
    binary, model, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    checks = own_template(binary, model, extra)
    checks += qwen3_template(binary, model, extra)
    checks += qwq_template(binary, model, extra)
    print(f"test_serve_tools: {checks} checks passed (openai {openai.__version__})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""`nvfp4 serve`'s Responses API (/v1/responses) and Messages API (/v1/messages) against the official
clients: PyPI `openai` (client.responses.create) and PyPI `anthropic` (client.messages.create).

    python tools/test_serve_agents.py build/nvfp4 MODEL.gguf [--quantize]

MODEL is the bundled SmolLM2-135M-Instruct. Every greedy answer is compared with what
/v1/chat/completions gives for the same conversation: the same tool calls, the same text, the same
token counts (so the same tokens). Two servers in turn:
1. `--chat-template qwen3` (Qwen3's template; the model shares ChatML's tokens): two earlier turns
   in which the assistant called get_weather make greedy SmolLM2 call it again. Responses: the call
   as a function_call item (streamed and not), the tool's result sent back as a
   function_call_output, by previous_response_id and as explicit items; an unknown
   previous_response_id is a 404. Messages: the call as a tool_use block (stop_reason tool_use),
   streamed (the SDK's accumulated message equal to the whole one) and not, the result sent back
   in a tool_result block; stop_sequences, count_tokens, x-api-key, and 400s in each API's own
   error shape naming the field.
2. `--chat-template qwq` (its generation prompt ends with "<think>\\n"): the reply's reasoning is a
   reasoning item (Responses) and a thinking block (Messages), equal to the chat route's
   reasoning_content, streamed and not.
Exit 0 when every check passes.
"""
import json
import os
import sys

import urllib.error
import urllib.request

import anthropic
import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_serve_openai import start  # noqa: E402
from serve_client import client, stop  # noqa: E402
from test_serve_tools import FEW_SHOT, TOOLS, user  # noqa: E402

FN = TOOLS[0]["function"]
RESP_TOOLS = [{"type": "function", "name": FN["name"], "description": FN["description"], "parameters": FN["parameters"]}]
# The anthropic SDK dropped the temperature argument (newer models take none); the body still may
# carry it (extra_body), as Anthropic's API documents it.
GREEDY = {"temperature": 0}
ANTH_TOOLS = [{"name": FN["name"], "description": FN["description"], "input_schema": FN["parameters"]}]


def resp_items(messages):
    """Chat messages as Responses input items."""
    items = []
    for m in messages:
        if m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        elif m.get("tool_calls"):
            if m.get("content"):
                items.append({"role": "assistant", "content": m["content"]})
            for tc in m["tool_calls"]:
                items.append({"type": "function_call", "call_id": tc["id"], "name": tc["function"]["name"],
                              "arguments": tc["function"]["arguments"]})
        else:
            items.append({"role": m["role"], "content": m["content"]})
    return items


def anth_messages(messages):
    """Chat messages as Anthropic messages (tool results in the user turn that follows)."""
    out = []
    for m in messages:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant":
            blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            for tc in m.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": tc["id"], "name": tc["function"]["name"],
                               "input": json.loads(tc["function"]["arguments"])})
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def chat(c, messages, max_tokens, **kw):
    r = c.chat.completions.create(model="m", messages=messages, max_tokens=max_tokens, temperature=0, **kw)
    return r.choices[0], r.usage


def calls_of_output(output):
    return [(o.name, json.loads(o.arguments)) for o in output if o.type == "function_call"]


def calls_of_chat(ch):
    return [(tc.function.name, json.loads(tc.function.arguments)) for tc in ch.message.tool_calls or []]


def resp_stream(c, **kw):
    """Streams a response; checks the event sequence; returns the final response and the text deltas."""
    events = list(c.responses.create(stream=True, **kw))
    assert [e.sequence_number for e in events] == list(range(len(events))), [e.type for e in events]
    types = [e.type for e in events]
    assert types[0] == "response.created" and types[-1] in ("response.completed", "response.incomplete"), types
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    reasoning = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    args = [(e.name, json.loads(e.arguments)) for e in events if e.type == "response.function_call_arguments.done"]
    added = [e.item.type for e in events if e.type == "response.output_item.added"]
    done = [e.item.type for e in events if e.type == "response.output_item.done"]
    assert added == done, (added, done)
    final = events[-1].response
    assert [o.type for o in final.output] == done, (final.output, done)
    return final, text, reasoning, args


def same_usage_resp(r, usage):
    assert (r.usage.input_tokens, r.usage.output_tokens) == (usage.prompt_tokens, usage.completion_tokens), (r.usage, usage)


def same_usage_anth(m, usage):
    assert (m.usage.input_tokens, m.usage.output_tokens) == (usage.prompt_tokens, usage.completion_tokens), (m.usage, usage)


def without_ids(m):
    """A message's fields but its id and the tool_use ids (random per reply)."""
    d = m.model_dump(exclude={"id"})
    for b in d["content"]:
        b.pop("id", None)
    return d


def anth_stop(finish):
    return {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}[finish]


def responses_checks(c, port):
    checks = 0
    ch, usage = chat(c, FEW_SHOT, 48, tools=TOOLS)
    assert ch.finish_reason == "tool_calls", ch
    want = calls_of_chat(ch)
    assert want == [("get_weather", {"city": "Berlin"})], want
    # Whole.
    r = c.responses.create(model="m", input=resp_items(FEW_SHOT), tools=RESP_TOOLS, max_output_tokens=48, temperature=0)
    assert r.status == "completed" and r.id.startswith("resp_"), r
    assert calls_of_output(r.output) == want, r.output
    fc = [o for o in r.output if o.type == "function_call"][0]
    assert len(fc.call_id) == 9 and fc.status == "completed", fc
    same_usage_resp(r, usage)
    checks += 1
    # Streamed: the same items.
    final, text, _, args = resp_stream(c, model="m", input=resp_items(FEW_SHOT), tools=RESP_TOOLS,
                                       max_output_tokens=48, temperature=0)
    assert args == want and calls_of_output(final.output) == want and text == "", (args, final.output, text)
    same_usage_resp(final, usage)
    checks += 1
    # The tool's result: by previous_response_id, and as explicit items; both as the chat route.
    result = {"role": "tool", "tool_call_id": fc.call_id, "content": "{\"temperature\": 21}"}
    turn = FEW_SHOT + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": fc.call_id, "type": "function", "function": {"name": fc.name, "arguments": fc.arguments}}]}, result]
    ch2, usage2 = chat(c, turn, 24, tools=TOOLS)
    r2 = c.responses.create(model="m", previous_response_id=r.id, tools=RESP_TOOLS, max_output_tokens=24, temperature=0,
                            input=[{"type": "function_call_output", "call_id": fc.call_id, "output": result["content"]}])
    assert r2.previous_response_id == r.id, r2
    assert r2.output_text == (ch2.message.content or ""), (r2.output_text, ch2.message.content)
    assert calls_of_output(r2.output) == calls_of_chat(ch2), (r2.output, ch2)
    same_usage_resp(r2, usage2)
    r3 = c.responses.create(model="m", input=resp_items(turn), tools=RESP_TOOLS, max_output_tokens=24, temperature=0)
    assert r3.output_text == r2.output_text and r3.usage.input_tokens == r2.usage.input_tokens, (r3, r2)
    checks += 2
    # Text, with instructions: whole and streamed equal the chat route's.
    msgs = [{"role": "system", "content": "Be brief."}, user("Paris")]
    ch3, usage3 = chat(c, msgs, 20)
    r4 = c.responses.create(model="m", instructions="Be brief.", input=user("Paris")["content"], max_output_tokens=20,
                            temperature=0)
    assert r4.output_text == ch3.message.content, (r4.output_text, ch3.message.content)
    assert r4.status == ("incomplete" if ch3.finish_reason == "length" else "completed"), (r4.status, ch3.finish_reason)
    same_usage_resp(r4, usage3)
    final, text, _, _ = resp_stream(c, model="m", instructions="Be brief.", input=user("Paris")["content"],
                                    max_output_tokens=20, temperature=0)
    assert text == final.output_text == ch3.message.content, (text, final.output_text)
    checks += 2
    # A chain: the second turn sees the first (instructions are not carried over).
    r5 = c.responses.create(model="m", previous_response_id=r4.id, input="And Rome?", max_output_tokens=12, temperature=0)
    ch5, usage5 = chat(c, [user("Paris"), {"role": "assistant", "content": r4.output_text},
                           {"role": "user", "content": "And Rome?"}], 12)
    assert r5.output_text == ch5.message.content, (r5.output_text, ch5.message.content)
    same_usage_resp(r5, usage5)
    checks += 1
    # Unknown ids and bad input: OpenAI's error shape, the field named.
    try:
        c.responses.create(model="m", previous_response_id="resp_nope", input="x", max_output_tokens=4)
        raise AssertionError("an unknown previous_response_id was accepted")
    except openai.NotFoundError as e:
        assert e.body["param"] == "previous_response_id", e.body
    checks += 1
    for param, kw in [("input[0].type", {"input": [{"type": "computer_call_output", "call_id": "x"}]}),
                      ("tools[0].type", {"input": "x", "tools": [{"type": "web_search"}]}),
                      ("tools[0].name", {"input": "x", "tools": [{"type": "function", "name": "no spaces"}]}),
                      ("input[0].content[0].type", {"input": [{"role": "user", "content": [{"type": "input_audio"}]}]}),
                      ("input[0].call_id", {"input": [{"type": "function_call_output", "output": "x"}]}),
                      ("max_output_tokens", {"input": "x", "max_output_tokens": 0}),
                      ("input", {"input": 5})]:
        try:
            c.responses.create(model="m", **kw)
            raise AssertionError(f"accepted: {kw}")
        except openai.BadRequestError as e:
            assert e.body["param"] == param and e.body["type"] == "invalid_request_error", (param, e.body)
        checks += 1
    return checks


def messages_checks(c, port):
    checks = 0
    a = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0, timeout=300)
    ch, usage = chat(c, FEW_SHOT, 48, tools=TOOLS)
    want = calls_of_chat(ch)
    kw = dict(model="m", max_tokens=48, extra_body=GREEDY, tools=ANTH_TOOLS, messages=anth_messages(FEW_SHOT))
    m = a.messages.create(**kw)
    assert m.stop_reason == "tool_use" and m.type == "message" and m.role == "assistant", m
    uses = [b for b in m.content if b.type == "tool_use"]
    assert [(b.name, b.input) for b in uses] == want, m.content
    same_usage_anth(m, usage)
    checks += 1
    with a.messages.stream(**kw) as s:
        streamed = s.get_final_message()
    assert without_ids(streamed) == without_ids(m), (streamed, m)
    raw = [e.type for e in a.messages.create(stream=True, **kw)]
    assert raw[0] == "message_start" and raw[-2:] == ["message_delta", "message_stop"], raw
    assert raw.count("content_block_start") == raw.count("content_block_stop") == len(m.content), raw
    checks += 2
    # The tool's result back in a tool_result block; the answer as the chat route's.
    turn = FEW_SHOT + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": uses[0].id, "type": "function", "function": {"name": uses[0].name, "arguments": json.dumps(uses[0].input)}}]},
        {"role": "tool", "tool_call_id": uses[0].id, "content": "{\"temperature\": 21}"}]
    ch2, usage2 = chat(c, turn, 24, tools=TOOLS)
    m2 = a.messages.create(model="m", max_tokens=24, extra_body=GREEDY, tools=ANTH_TOOLS, messages=anth_messages(turn))
    text = "".join(b.text for b in m2.content if b.type == "text")
    assert text == (ch2.message.content or ""), (text, ch2.message.content)
    assert [(b.name, b.input) for b in m2.content if b.type == "tool_use"] == calls_of_chat(ch2), m2
    assert m2.stop_reason == anth_stop(ch2.finish_reason), (m2.stop_reason, ch2.finish_reason)
    same_usage_anth(m2, usage2)
    checks += 1
    # Text with a system prompt, streamed with the SDK's text_stream; a stop sequence.
    msgs = [{"role": "system", "content": "Be brief."}, user("Paris")]
    ch3, usage3 = chat(c, msgs, 20)
    with a.messages.stream(model="m", max_tokens=20, extra_body=GREEDY, system="Be brief.", messages=[user("Paris")]) as s:
        text = "".join(s.text_stream)
        m3 = s.get_final_message()
    assert text == ch3.message.content and m3.stop_reason == anth_stop(ch3.finish_reason), (text, ch3)
    same_usage_anth(m3, usage3)
    content = ch3.message.content
    if len(content) >= 8:
        stop_at = content[len(content) // 2:len(content) // 2 + 3]
        ch4, _ = chat(c, msgs, 20, stop=[stop_at])
        m4 = a.messages.create(model="m", max_tokens=20, extra_body=GREEDY, system="Be brief.", messages=[user("Paris")],
                               stop_sequences=[stop_at])
        assert m4.stop_reason == "stop_sequence" and m4.stop_sequence == stop_at, m4
        assert m4.content[0].text == ch4.message.content, (m4.content, ch4.message.content)
        checks += 1
    checks += 1
    n = a.messages.count_tokens(model="m", system="Be brief.", messages=[user("Paris")])
    assert n.input_tokens == usage3.prompt_tokens, (n, usage3)
    checks += 1
    # Errors in Anthropic's shape, naming the field; the API key checked in x-api-key.
    for field, body in [("messages[0].content[0].type",
                         {"max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}),
                        ("tools[0].input_schema", {"max_tokens": 4, "messages": [user("x")], "tools": [{"name": "f"}]}),
                        ("messages[0].role", {"max_tokens": 4, "messages": [{"role": "system", "content": "x"}]})]:
        try:
            a.messages.create(model="m", **body)
            raise AssertionError(f"accepted: {body}")
        except anthropic.BadRequestError as e:
            assert e.body["type"] == "error" and e.body["error"]["type"] == "invalid_request_error", e.body
            assert f"'{field}'" in e.body["error"]["message"], (field, e.body)
        checks += 1
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/messages", method="POST",
                                 data=json.dumps({"model": "m", "messages": [user("x")]}).encode(),
                                 headers={"x-api-key": "k", "anthropic-version": "2023-06-01",
                                          "content-type": "application/json"})
    try:
        urllib.request.urlopen(req)
        raise AssertionError("a body without max_tokens was accepted")
    except urllib.error.HTTPError as e:
        body = json.loads(e.read())
        assert e.code == 400 and "'max_tokens' is required" in body["error"]["message"], body
    try:
        anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="wrong", max_retries=0).messages.create(
            model="m", max_tokens=4, messages=[user("x")])
        raise AssertionError("a wrong key was accepted")
    except anthropic.AuthenticationError as e:
        assert e.body["error"]["type"] == "authentication_error", e.body
    checks += 2
    return checks


def thinking_checks(binary, model, extra):
    p, port = start(binary, model, extra + ["--chat-template", "qwq"], parallel=2)
    try:
        c = client(port)
        ch, usage = chat(c, [user("Paris")], 24)
        reasoning = (ch.message.model_extra or {}).get("reasoning_content", "")
        assert reasoning, ch
        r = c.responses.create(model="m", input=user("Paris")["content"], max_output_tokens=24, temperature=0)
        items = [o for o in r.output if o.type == "reasoning"]
        assert len(items) == 1 and "".join(x.text for x in items[0].content) == reasoning, r.output
        assert r.output_text == (ch.message.content or ""), (r.output_text, ch.message.content)
        same_usage_resp(r, usage)
        final, text, streamed_reasoning, _ = resp_stream(c, model="m", input=user("Paris")["content"],
                                                         max_output_tokens=24, temperature=0)
        assert streamed_reasoning == reasoning and text == r.output_text, (streamed_reasoning, text)
        a = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0, timeout=300)
        kw = dict(model="m", max_tokens=24, extra_body=GREEDY, messages=[user("Paris")],
                  thinking={"type": "enabled", "budget_tokens": 1024})
        m = a.messages.create(**kw)
        assert m.content[0].type == "thinking" and m.content[0].thinking == reasoning, m.content
        assert "".join(b.text for b in m.content if b.type == "text") == (ch.message.content or ""), m.content
        same_usage_anth(m, usage)
        with a.messages.stream(**kw) as s:
            streamed = s.get_final_message()
        assert without_ids(streamed) == without_ids(m), (streamed, m)
    finally:
        stop(p)
    return 4


def main():
    binary, model, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    p, port = start(binary, model, extra + ["--chat-template", "qwen3"], parallel=2)
    try:
        c = client(port)
        checks = responses_checks(c, port)
        checks += messages_checks(c, port)
    finally:
        stop(p)
    checks += thinking_checks(binary, model, extra)
    print(f"test_serve_agents: {checks} checks passed (openai {openai.__version__}, anthropic {anthropic.__version__})")


if __name__ == "__main__":
    main()

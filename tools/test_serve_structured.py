#!/usr/bin/env python3
"""Structured output of `nvfp4 serve` against the official OpenAI Python client (PyPI `openai`),
each output parsed by Python's json and validated by PyPI `jsonschema`.

    python tools/test_serve_structured.py build/nvfp4 MODEL.gguf [--quantize]

MODEL is the bundled SmolLM2-135M-Instruct. Two servers in turn:
1. Its own chat template: response_format json_object and json_schema (strict; nested objects,
   enum, const, anyOf, nullable, arrays with bounds, strings with maxLength, a pattern, a $ref), greedy and
   sampled (seeded), whole and streamed; the Responses API's text.format; /v1/completions with a
   response_format. Each constrained request gives the same text alone and among 8 concurrent
   requests (4 slots), and a plain request's text is the same before, during and after them.
   Schemas the server cannot enforce are 400s naming the field. (tools/test_serve_grammar.py runs
   a corpus of 200+ schemas and GBNF grammars.)
2. `--spec ngram` (speculative decoding, drafts from n-gram lookup): the same constrained requests,
   8 at once, give the texts the first server gave each alone (drafts are checked against the
   masked picks), and drafts were fed.
3. `--chat-template qwen3` (Hermes tool calls): tool_choice "required" on a prompt the model answers
   in text otherwise, and a named function among two tools: the reply is that call, its
   arguments valid against the tool's parameters.
4. The tiny Qwen3.5 and Gemma 4 checkpoints (fixtures/, random weights) with their families' own
   templates (`--chat-template-file`): tool_choice "required" and named, greedy and sampled, gives
   one call in the family's format (Qwen's XML parameters, Gemma 4's), parsed back into tool_calls
   whose arguments validate against typed parameters (bounded strings, integers, numbers, enums),
   and streamed deltas that add up to the same call.
Exit 0 when every check passes.
"""
import concurrent.futures
import json
import math
import os
import sys
import urllib.request

from typing import Annotated, Literal

import jsonschema
import openai
from pydantic import BaseModel, Field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import bad_request, client, metric, one, stop  # noqa: E402
from test_serve_openai import start  # noqa: E402

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer"},
        "role": {"enum": ["engineer", "artist", "teacher"]},
        "kind": {"const": "person"},
        "email": {"type": ["string", "null"], "maxLength": 32},
        "skills": {"type": "array", "items": {"type": "string", "maxLength": 16}, "minItems": 1, "maxItems": 3},
        "address": {"$ref": "#/$defs/address"},
        "score": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        "active": {"type": "boolean"},
    },
    "required": ["name", "age", "role", "kind", "email", "skills", "address", "score", "active"],
    "additionalProperties": False,
    "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                            "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                          "required": ["city", "zip"], "additionalProperties": False}},
}
LIST = {
    "type": "object",
    "properties": {"items": {"type": "array", "maxItems": 4,
                             "items": {"type": "object", "properties": {"id": {"type": "integer"},
                                                                        "done": {"type": "boolean"}},
                                       "required": ["id", "done"], "additionalProperties": False}}},
    "required": ["items"], "additionalProperties": False,
}
ASK = [{"role": "system", "content": "You answer in JSON."},
       {"role": "user", "content": "Describe a person who lives in Paris as JSON."}]


class Address(BaseModel):
    city: str = Field(max_length=20)
    zip: str = Field(max_length=8)


class Person(BaseModel):
    """What `parse` sends: pydantic's schema made strict by the client ($defs and $ref for Address)."""
    name: str = Field(max_length=24)
    age: int
    role: Literal["engineer", "artist", "teacher"]
    address: Address
    skills: list[Annotated[str, Field(max_length=16)]] = Field(max_length=3)


def schema_format(name, schema):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def stream_text(c, **kw):
    text, finish = "", None
    for ch in c.chat.completions.create(stream=True, **kw):
        if ch.choices:
            text += ch.choices[0].delta.content or ""
            finish = ch.choices[0].finish_reason or finish
    return text, finish


def check_json(text, finish, schema=None):
    assert finish == "stop", (finish, text)
    doc = json.loads(text)
    if schema is None:
        assert isinstance(doc, dict), text
    else:
        jsonschema.validate(doc, schema)
    return doc


def chat_requests():
    """(kwargs, schema or None) of each constrained chat request: greedy and sampled."""
    out = []
    for schema, name in ((None, None), (PERSON, "person"), (LIST, "todo")):
        rf = {"type": "json_object"} if schema is None else schema_format(name, schema)
        out.append((dict(messages=ASK, response_format=rf, max_tokens=300, temperature=0), schema))
        # (json_object at seed 1: SmolLM2 opens a key and fills it with text until max_tokens, which
        # the grammar allows; seeds 2 to 10 close the object, so the sampled ones start at 2.)
        for seed in (1, 2, 3) if schema else (2, 3, 4):
            out.append((dict(messages=ASK, response_format=rf, max_tokens=300, temperature=0.8, seed=seed), schema))
    return out


def own_template(binary, model, extra, alone):
    checks = 0
    p, port = start(binary, model, extra, parallel=4)
    try:
        c = client(port)
        plain = dict(messages=[{"role": "user", "content": "Name three colors."}], max_tokens=24, temperature=0)
        plain_alone = one(c, plain)
        reqs = chat_requests()
        for kw, schema in reqs:
            text, finish = one(c, kw)
            check_json(text, finish, schema)
            alone.append(text)
            checks += 1
        # Streamed: the same text as whole.
        for (kw, schema), whole in zip(reqs[:2] + reqs[4:6], alone[:2] + alone[4:6]):
            text, finish = stream_text(c, model="m", **kw)
            check_json(text, finish, schema)
            assert text == whole, (text, whole)
            checks += 1
        # Under load: each request's text equals its text alone; the plain one is unchanged.
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            futs = [ex.submit(one, c, kw) for kw, _ in reqs] + [ex.submit(one, c, plain) for _ in range(3)]
            got = [f.result() for f in futs]
        for (text, _), want in zip(got, alone):
            assert text == want, (text, want)
            checks += 1
        for g in got[len(reqs):]:
            assert g == plain_alone, (g, plain_alone)
            checks += 1
        assert one(c, plain) == plain_alone
        checks += 1
        # The client's parse() with a pydantic model.
        for temp, seed in ((0, None), (0.8, 7)):
            r = c.chat.completions.parse(model="m", messages=ASK, response_format=Person, max_tokens=300,
                                         temperature=temp, seed=seed)
            assert isinstance(r.choices[0].message.parsed, Person), r
            checks += 1
        # Logprobs of a constrained request are over the tokens the grammar admits: at the first
        # position of a schema's output only tokens that begin "{" have any probability, and the
        # picked token's logprob is the masked row's (higher than the free row gives "{").
        r = c.chat.completions.create(model="m", messages=ASK, max_tokens=4, temperature=0, logprobs=True,
                                      top_logprobs=5, response_format={"type": "json_schema", "json_schema": {
                                          "name": "person", "strict": True, "schema": PERSON}})
        first = r.choices[0].logprobs.content[0]
        assert first.token.startswith("{"), first
        for t in first.top_logprobs:
            assert t.token.startswith("{") or t.logprob <= -9999, first
        assert sum(math.exp(t.logprob) for t in first.top_logprobs) <= 1 + 1e-6, first
        free = c.chat.completions.create(model="m", messages=ASK, max_tokens=1, temperature=0, logprobs=True,
                                         top_logprobs=20).choices[0].logprobs.content[0]
        assert first.logprob > max([t.logprob for t in free.top_logprobs if t.token == first.token] + [-1e9]), (first, free)
        checks += 1
        # The Responses API's text.format.
        r = c.responses.create(model="m", input=ASK[1]["content"], instructions=ASK[0]["content"],
                               max_output_tokens=300, temperature=0,
                               text={"format": {"type": "json_schema", "name": "person", "schema": PERSON,
                                                "strict": True}})
        jsonschema.validate(json.loads(r.output_text), PERSON)
        assert r.status == "completed", r
        checks += 1
        # /v1/completions with a response_format.
        r = c.completions.create(model="m", prompt="A JSON list of tasks:", max_tokens=160, temperature=0,
                                 extra_body={"response_format": schema_format("todo", LIST)})
        check_json(r.choices[0].text, r.choices[0].finish_reason, LIST)
        checks += 1
        # Refusals name the field.
        bad = {"type": "object", "properties": {"x": {"type": "string", "not": {"const": "a"}}}}
        checks += bad_request(lambda: c.chat.completions.create(model="m", messages=ASK, max_tokens=4,
                                                                response_format=schema_format("b", bad)),
                              "response_format.json_schema.schema.properties.x.not")
        checks += bad_request(lambda: c.chat.completions.create(model="m", messages=ASK, max_tokens=4,
                                                                response_format={"type": "xml"}),
                              "response_format.type")
        checks += bad_request(lambda: c.responses.create(model="m", input="x", max_output_tokens=4,
                                                         text={"format": {"type": "json_schema", "name": "b",
                                                                          "schema": bad}}),
                              "text.format.schema.properties.x.not")
        # The masks' cost, as the server counts it (reported, not asserted: the cores are shared).
        req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": "Bearer k"})
        m = dict(l.split(" ", 1) for l in urllib.request.urlopen(req).read().decode().splitlines()
                 if l.startswith("nvfp4_constrained_mask"))
        n, secs = float(m["nvfp4_constrained_masks_total"]), float(m["nvfp4_constrained_mask_seconds_total"])
        assert n > 0, m
        print(f"  {int(n)} token masks, {1e3 * secs / n:.2f} ms each on average")
    finally:
        stop(p)
    return checks


TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24},
                                                        "unit": {"enum": ["celsius", "fahrenheit"]}},
                       "required": ["city", "unit"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two integers",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"], "additionalProperties": False}}},
]


def speculation(binary, model, extra, alone):
    checks = 0
    p, port = start(binary, model, extra + ["--spec", "ngram"], parallel=4)
    try:
        c = client(port)
        reqs = chat_requests()
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            got = list(ex.map(lambda kw: one(c, kw[0]), reqs))
        for (text, _), want in zip(got, alone):
            assert text == want, (text, want)
            checks += 1
        drafted = metric(port, "nvfp4_spec_drafted_tokens_total")
        print(f"  speculation: {int(drafted)} drafted, {int(metric(port, 'nvfp4_spec_accepted_tokens_total'))} accepted")
        assert drafted > 0
        checks += 1
    finally:
        stop(p)
    return checks


def qwen3_template(binary, model, extra):
    checks = 0
    p, port = start(binary, model, extra + ["--chat-template", "qwen3"], parallel=2)
    try:
        c = client(port)
        hello = [{"role": "user", "content": "Hello! How are you today?"}]
        free = c.chat.completions.create(model="m", messages=hello, tools=TOOLS, max_tokens=24, temperature=0)
        assert free.choices[0].message.tool_calls is None, free  # the model answers in text by itself
        checks += 1
        params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
        for choice, want in (("required", None), ({"type": "function", "function": {"name": "add"}}, "add"),
                             ({"type": "function", "function": {"name": "get_weather"}}, "get_weather")):
            for temp, seed in ((0, None), (0.8, 5)):
                r = c.chat.completions.create(model="m", messages=hello, tools=TOOLS, tool_choice=choice,
                                              max_tokens=80, temperature=temp, seed=seed)
                ch = r.choices[0]
                assert ch.finish_reason == "tool_calls", r
                assert len(ch.message.tool_calls) == 1, r
                f = ch.message.tool_calls[0].function
                assert want is None or f.name == want, (want, f)
                jsonschema.validate(json.loads(f.arguments), params[f.name])
                checks += 1
    finally:
        stop(p)
    return checks


# Typed parameters, as the families' own call formats write them (not JSON: Qwen3.5's XML
# parameters, Gemma 4's bare values and <|"|> strings).
TYPED = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city over some days",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "minLength": 2, "maxLength": 12},
                                                        "days": {"type": "integer"},
                                                        "unit": {"type": "string", "enum": ["c", "f"]}},
                       "required": ["city", "days", "unit"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two numbers",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"},
                                                        "exact": {"type": "boolean"}},
                       "required": ["a", "b"]}}},
]
# The tiny random-weight checkpoints of each family (exported by ModelOpt) with the family's
# published chat template: the model's own code, the template's call format, its grammar and its
# parser, end to end. Random weights say nothing useful: only the constraint makes the call.
FAMILIES = [("fixtures/hybrid/qwen3_5/modelopt-nvfp4", "fixtures/chat_templates/qwen3.5.jinja", "qwen xml"),
            ("fixtures/gemma4/modelopt-nvfp4", "fixtures/chat_templates/gemma4.jinja", "gemma4")]


def family_templates(binary):
    checks = 0
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    params = {t["function"]["name"]: t["function"]["parameters"] for t in TYPED}
    for model, template, fmt in FAMILIES:
        p, port = start(binary, os.path.join(root, model), ["--chat-template-file", os.path.join(root, template)],
                        parallel=2, ctx=2048)
        try:
            c = client(port)
            ask = [{"role": "user", "content": "What is the weather in Paris this week?"}]
            kw = {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
            for choice, want in (("required", None), ({"type": "function", "function": {"name": "add"}}, "add"),
                                 ({"type": "function", "function": {"name": "get_weather"}}, "get_weather")):
                for temp, seed in ((0, None), (0.8, 5), (1.0, 11)):
                    r = c.chat.completions.create(model="m", messages=ask, tools=TYPED, tool_choice=choice,
                                                  max_tokens=400, temperature=temp, seed=seed, **kw)
                    ch = r.choices[0]
                    assert ch.finish_reason == "tool_calls" and len(ch.message.tool_calls or []) == 1, (fmt, choice, r)
                    f = ch.message.tool_calls[0].function
                    assert want is None or f.name == want, (fmt, want, f)
                    jsonschema.validate(json.loads(f.arguments), params[f.name])
                    checks += 1
                    if temp == 0:  # streamed: the deltas add up to the same call
                        got = c.chat.completions.create(model="m", messages=ask, tools=TYPED, tool_choice=choice,
                                                        max_tokens=400, temperature=0, stream=True, **kw)
                        name, args, finish = "", "", None
                        for chunk in got:
                            if not chunk.choices:
                                continue
                            for tc in chunk.choices[0].delta.tool_calls or []:
                                name += (tc.function.name or "") if tc.function else ""
                                args += (tc.function.arguments or "") if tc.function else ""
                            finish = chunk.choices[0].finish_reason or finish
                        assert (name, json.loads(args), finish) == (f.name, json.loads(f.arguments), "tool_calls"), (fmt, name, args)
                        checks += 1
            print(f"  {fmt}: tool_choice calls valid against their schemas ({model})")
        finally:
            stop(p)
    return checks


def main():
    binary, model, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    alone = []
    n = own_template(binary, model, extra, alone)
    n += speculation(binary, model, extra, alone)
    n += qwen3_template(binary, model, extra)
    n += family_templates(binary)
    print(f"test_serve_structured: {n} checks passed")


if __name__ == "__main__":
    main()

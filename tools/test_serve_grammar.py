#!/usr/bin/env python3
"""Structured output of `nvfp4 serve` over a corpus, checked by what we did not write: every output
under a JSON schema validates with PyPI `jsonschema` (formats too), every output under a GBNF grammar
parses with PyPI `lark` (the same language written as a Lark grammar).

    python tools/test_serve_grammar.py build/nvfp4 MODEL.gguf [--quantize] [--schemas N]

MODEL is the bundled SmolLM2-135M-Instruct; one server, 4 slots, 8 requests at a time.
1. At least 200 schemas (N, default 200): real-world-shaped ones (an address, an invoice, a
   calendar event, a GitHub issue, a search query, ...) and the rest generated from a seed:
   nested objects, enums, const, arrays with minItems/maxItems, anyOf, oneOf, nullable types,
   patterns, formats (date, date-time, time, uuid, ipv4), numeric bounds (inclusive and
   exclusive), prefixItems, a single allOf, $ref into $defs. Each greedy and sampled (seeded):
   finish_reason "stop", json.loads, jsonschema.validate with a format checker.
2. GBNF grammars (llama.cpp's `grammar` field, vLLM's `guided_grammar` and
   `structured_outputs.grammar`), greedy and sampled, on chat and /v1/completions: the text parses
   with the grammar's Lark twin. vLLM's guided_choice and guided_regex too (checked by Python's re).
3. Refusals: malformed schemas, GBNF that does not parse, a grammar that admits nothing, two
   constraints at once: 400s naming the field.
Exit 0 when every check passes.
"""
import concurrent.futures
import datetime
import ipaddress
import json
import os
import random
import re
import sys
import uuid

import jsonschema
import lark

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_client import bad_request, client, metric, stop  # noqa: E402
from test_serve_openai import start  # noqa: E402

FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(s):
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", s), s
    datetime.datetime.fromisoformat(s.upper().replace("Z", "+00:00"))
    return True


@FORMATS.checks("time", raises=ValueError)
def _time(s):
    assert re.fullmatch(r"\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", s), s
    datetime.time.fromisoformat(s.upper().replace("Z", "+00:00"))
    return True


@FORMATS.checks("date", raises=ValueError)
def _date(s):
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", s), s
    datetime.date.fromisoformat(s)
    return True


@FORMATS.checks("uuid", raises=ValueError)
def _uuid(s):
    assert len(s) == 36, s
    uuid.UUID(s)
    return True


@FORMATS.checks("ipv4", raises=ValueError)
def _ipv4(s):
    ipaddress.IPv4Address(s)
    return True


def obj(props, required=None, **kw):
    return {"type": "object", "properties": props, "required": list(props) if required is None else required,
            "additionalProperties": False, **kw}


S = {"type": "string", "maxLength": 16}
REAL = [
    obj({"street": S, "city": S, "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
         "country": {"enum": ["US", "FR", "DE", "JP"]}}),
    obj({"invoice": {"type": "string", "pattern": "^INV-[0-9]{4}$"}, "date": {"type": "string", "format": "date"},
         "lines": {"type": "array", "minItems": 1, "maxItems": 3,
                   "items": obj({"item": S, "qty": {"type": "integer", "minimum": 1, "maximum": 99},
                                 "price": {"type": "number", "minimum": 0, "maximum": 1000}})},
         "paid": {"type": "boolean"}}),
    obj({"title": S, "start": {"type": "string", "format": "date-time"}, "minutes": {"type": "integer", "minimum": 5,
                                                                                      "maximum": 480},
         "attendees": {"type": "array", "maxItems": 3, "items": {"type": "string", "format": "uuid"}}}),
    obj({"number": {"type": "integer", "minimum": 1, "maximum": 99999}, "title": S,
         "state": {"enum": ["open", "closed"]}, "labels": {"type": "array", "maxItems": 3,
                                                           "items": {"enum": ["bug", "docs", "feature"]}},
         "assignee": {"anyOf": [S, {"type": "null"}]}}),
    obj({"query": S, "limit": {"type": "integer", "minimum": 1, "maximum": 50},
         "sort": {"enum": ["relevance", "date"]}, "filters": obj({"lang": {"enum": ["en", "fr"]},
                                                                  "after": {"type": "string", "format": "date"}},
                                                                 required=["lang"])}),
    obj({"id": {"type": "string", "format": "uuid"}, "host": {"type": "string", "format": "ipv4"},
         "port": {"type": "integer", "minimum": 1, "maximum": 65535}, "tls": {"type": "boolean"}}),
    obj({"sentiment": {"enum": ["positive", "negative", "neutral"]},
         "confidence": {"type": "number", "minimum": 0, "maximum": 1}}),
    obj({"kind": {"const": "point"}, "coords": {"type": "array", "prefixItems": [
        {"type": "number", "minimum": -90, "maximum": 90}, {"type": "number", "minimum": -180, "maximum": 180}],
        "items": False, "minItems": 2}}),
    {"oneOf": [obj({"type": {"const": "circle"}, "r": {"type": "integer", "minimum": 1, "maximum": 9}}),
               obj({"type": {"const": "square"}, "side": {"type": "integer", "minimum": 1, "maximum": 9}})]},
    {"allOf": [obj({"name": S, "age": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 130}})]},
    obj({"root": {"$ref": "#/$defs/node"}}, **{"$defs": {"node": obj(
        {"label": {"type": "string", "maxLength": 8},
         "children": {"type": "array", "maxItems": 2, "items": obj({"label": {"type": "string", "maxLength": 8}})}})}}),
    obj({"time": {"type": "string", "format": "time"}, "tz": {"type": "string", "pattern": "^[A-Z]{3}$"}}),
    obj({"ok": {"type": "boolean"}, "error": {"type": ["string", "null"], "maxLength": 20}}),
    obj({"rgb": {"type": "array", "minItems": 3, "maxItems": 3,
                 "items": {"type": "integer", "minimum": 0, "maximum": 255}}}),
    obj({"sku": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"}, "stock": {"type": "integer", "minimum": 0,
                                                                               "maximum": 1000}}),
    {"type": "array", "minItems": 1, "maxItems": 4, "items": {"enum": ["red", "green", "blue"]}},
    {"enum": ["yes", "no", "maybe"]},
    {"type": "integer", "minimum": -20, "maximum": 20},
    {"type": "string", "pattern": "^[a-z]{1,8}(-[a-z]{1,8}){0,2}$", "description": "a slug"},
]

PATTERNS = ["^[A-Z]{2}[0-9]{2}$", "^[a-z]{3,6}$", "^#[0-9a-f]{6}$", "^v[0-9]\\.[0-9]{1,2}$", "^(yes|no)$",
            "^[0-9]{3}-[0-9]{4}$"]
FMTS = ["date", "date-time", "time", "uuid", "ipv4"]  # (email, uri, hostname: unbounded; a small model may not end them)


def gen_value(rng, depth):
    k = rng.randrange(14 if depth < 2 else 11)
    if k == 0:
        return {"type": "string", "maxLength": rng.randint(1, 12)}
    if k == 1:
        return {"enum": rng.sample(["alpha", "beta", "gamma", "delta", 1, 2, True, None], rng.randint(1, 4))}
    if k == 2:
        return {"type": "string", "pattern": rng.choice(PATTERNS)}
    if k == 3:
        return {"type": "string", "format": rng.choice(FMTS)}
    if k == 4:
        lo = rng.randint(-100, 50)
        s = {"type": "integer", "minimum": lo, "maximum": lo + rng.randint(0, 200)}
        if rng.random() < 0.3:
            s = {"type": "integer", "exclusiveMinimum": lo, "exclusiveMaximum": lo + rng.randint(2, 200)}
        return s
    if k == 5:
        lo = rng.choice([0, -1, 0.5, -10])
        return {"type": "number", "minimum": lo, "maximum": lo + rng.choice([1, 10, 100])}
    if k == 6:
        return {"type": "boolean"}
    if k == 7:
        return {"const": rng.choice(["fixed", 42, False])}
    if k == 8:
        return {"type": ["string", "null"], "maxLength": 8}
    if k == 9:
        return {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 9}, {"enum": ["none", "all"]}]}
    if k == 10:
        return {"oneOf": [{"type": "boolean"}, {"type": "string", "maxLength": 6}]}
    if k == 11:
        n = rng.randint(0, 2)
        return {"type": "array", "minItems": n, "maxItems": n + rng.randint(0, 2), "items": gen_value(rng, depth + 1)}
    return gen_object(rng, depth + 1)


def gen_object(rng, depth):
    names = rng.sample(["id", "name", "kind", "value", "tags", "when", "ip", "count", "ratio", "note", "ok"],
                       rng.randint(1, 4))
    props = {n: gen_value(rng, depth) for n in names}
    required = [n for n in names if rng.random() < 0.75]
    return obj(props, required=required)


def corpus(n, seed=31):
    rng = random.Random(seed)
    out = list(REAL)
    while len(out) < n:
        out.append(gen_object(rng, 0) if rng.random() < 0.85 else gen_value(rng, 1))
    return out


ASK = "Answer with JSON only."


def schema_request(c, i, schema, sampled):
    kw = dict(model="m", messages=[{"role": "system", "content": ASK},
                                   {"role": "user", "content": f"Example {i}: fill in the fields."}],
              max_tokens=256, response_format={"type": "json_schema",
                                               "json_schema": {"name": f"s{i}", "schema": schema, "strict": True}})
    kw.update(temperature=0.9, seed=i) if sampled else kw.update(temperature=0)
    r = c.chat.completions.create(**kw)
    return r.choices[0].message.content, r.choices[0].finish_reason


# GBNF grammars and their Lark twins (the same language).
GRAMMARS = [
    ('root ::= ("yes" | "no") "."', 'start: ("yes" | "no") "."'),
    ('root ::= [0-9]{4} "-" [0-9]{2} "-" [0-9]{2}', 'start: /[0-9]{4}-[0-9]{2}-[0-9]{2}/'),
    ('root ::= "- " word ("\\n- " word){0,3}\nword ::= [a-z]{1,10}',
     'start: "- " WORD ("\\n- " WORD)~0..3\nWORD: /[a-z]{1,10}/'),
    ('root ::= pair (";" pair){0,3}\npair ::= [a-z]{1,8} "=" [0-9]{1,4}',
     'start: pair (";" pair)~0..3\npair: /[a-z]{1,8}/ "=" /[0-9]{1,4}/'),
    ('root ::= "SELECT " cols " FROM " ident (" WHERE " ident " = " num)?\ncols ::= ident (", " ident){0,2}\n'
     'ident ::= [a-z]{1,8}\nnum ::= [0-9]{1,4}',
     'start: "SELECT " cols " FROM " IDENT (" WHERE " IDENT " = " NUM)?\ncols: IDENT (", " IDENT)~0..2\n'
     'IDENT: /[a-z]{1,8}/\nNUM: /[0-9]{1,4}/'),
    ('root ::= [A-Z] [a-z ]{0,30} "."', 'start: /[A-Z][a-z ]{0,30}\\./'),
    ('root ::= "{" ws "\\"ok\\"" ws ":" ws ("true" | "false") ws "}"\nws ::= [ ]?',
     'start: "{" WS? "\\"ok\\"" WS? ":" WS? ("true" | "false") WS? "}"\nWS: " "'),
    ('# llama.cpp style: comments, dashed names\nroot ::= greeting-word " " name "!"\n'
     'greeting-word ::= "hello" | "hi"  # two ways\nname ::= [A-Z] [a-z]{1,9}',
     'start: ("hello" | "hi") " " /[A-Z][a-z]{1,9}/ "!"'),
    ('root ::= expr\nexpr ::= term (("+" | "-") term){0,3}\nterm ::= [1-9] [0-9]? | "(" [1-9] ("*" [1-9]){1,2} ")"',
     'start: term (("+" | "-") term)~0..3\nterm: /[1-9][0-9]?/ | "(" /[1-9]/ ("*" /[1-9]/)~1..2 ")"'),
    ('root ::= "<" tag ">" [a-z ]{1,20} "</" tag ">"\ntag ::= "b" | "i" | "em"',
     'start: "<" TAG ">" /[a-z ]{1,20}/ "</" TAG ">"\nTAG: "b" | "i" | "em"'),
]


def grammar_request(c, i, gbnf, sampled, how):
    temp = dict(temperature=0.9, seed=100 + i) if sampled else dict(temperature=0)
    prompt = "Write one line."
    if how == "completions":
        r = c.completions.create(model="m", prompt=prompt, max_tokens=120, extra_body={"grammar": gbnf}, **temp)
        return r.choices[0].text, r.choices[0].finish_reason
    body = {"grammar": gbnf} if how == "grammar" else {"guided_grammar": gbnf} if how == "guided" else \
        {"structured_outputs": {"grammar": gbnf}}
    r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}], max_tokens=120,
                                  extra_body=body, **temp)
    return r.choices[0].message.content, r.choices[0].finish_reason


def main():
    args = sys.argv[1:]
    n = 200
    if "--schemas" in args:
        k = args.index("--schemas")
        n = int(args[k + 1])
        del args[k:k + 2]
    binary, model, extra = args[0], args[1], args[2:]
    schemas = corpus(n)
    checks = 0
    p, port = start(binary, model, extra, parallel=4)
    try:
        c = client(port)
        jobs = [(i, s, sampled) for i, s in enumerate(schemas) for sampled in (False, True)]
        failures = []
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            for k, ((i, s, sampled), (text, finish)) in enumerate(zip(jobs, ex.map(lambda a: schema_request(c, *a), jobs))):
                try:
                    assert finish == "stop", f"finish {finish}"
                    jsonschema.validate(json.loads(text), s, format_checker=FORMATS)
                    checks += 1
                except Exception as e:  # noqa: BLE001 (collected, reported together)
                    failures.append((i, sampled, json.dumps(s), text, repr(e)[:300]))
                if (k + 1) % 50 == 0:
                    print(f"  {k + 1} outputs, {len(failures)} failed", flush=True)
        for f in failures[:10]:
            print("  FAIL", *f, sep="\n    ")
        assert not failures, f"{len(failures)} of {len(jobs)} schema outputs failed"
        print(f"  {len(schemas)} schemas, {len(jobs)} outputs valid (greedy and sampled)")
        # GBNF grammars, parsed back by Lark.
        hows = ["grammar", "guided", "structured", "completions"]
        gjobs = [(i, g, l, sampled, hows[(i + sampled) % 4]) for i, (g, l) in enumerate(GRAMMARS)
                 for sampled in (False, True)]
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            ggot = list(ex.map(lambda a: grammar_request(c, a[0], a[1], a[3], a[4]), gjobs))
        for (i, g, lk, sampled, how), (text, finish) in zip(gjobs, ggot):
            assert finish == "stop", (g, how, finish, text)
            lark.Lark(lk, parser="earley", lexer="dynamic").parse(text)
            checks += 1
        print(f"  {len(gjobs)} GBNF outputs parse with Lark")
        # vLLM's guided_choice and guided_regex.
        for sampled in (False, True):
            temp = dict(temperature=0.9, seed=7) if sampled else dict(temperature=0)
            r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "Pick a color."}],
                                          max_tokens=20, extra_body={"guided_choice": ["red", "green", "blue"]}, **temp)
            assert r.choices[0].message.content in ("red", "green", "blue"), r
            r = c.completions.create(model="m", prompt="Phone:", max_tokens=20,
                                     extra_body={"guided_regex": "[0-9]{3}-[0-9]{4}"}, **temp)
            assert re.fullmatch(r"[0-9]{3}-[0-9]{4}", r.choices[0].text), r
            checks += 2
        # Refusals, each naming the field.
        msgs = [{"role": "user", "content": "x"}]

        def chat(**body):
            return lambda: c.chat.completions.create(model="m", messages=msgs, max_tokens=4, extra_body=body)

        rf = lambda s: {"response_format": {"type": "json_schema", "json_schema": {"name": "b", "schema": s}}}  # noqa: E731
        p_ = "response_format.json_schema.schema"
        for body, param in (
                (rf({"type": "strng"}), p_),
                (rf({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}), p_),
                (rf({"type": "object", "properties": {"a": {"if": {"type": "string"}}}}), p_ + ".properties.a.if"),
                (rf({"allOf": [{"type": "string"}, {"maxLength": 3}]}), p_ + ".allOf"),
                (rf({"type": "string", "format": "credit-card"}), p_ + ".format"),
                (rf(False), p_),
                ({"grammar": "root ::= missing"}, "grammar"),
                ({"grammar": "root ::= \"a"}, "grammar"),
                ({"grammar": "a ::= \"b\""}, "grammar"),
                ({"guided_regex": "[a-"}, "guided_regex"),
                ({"guided_choice": []}, "guided_choice"),
                ({"grammar": "root ::= \"a\"", "guided_regex": "b"}, "guided_regex"),
                ({"structured_outputs": {"json": "{not json"}}, "structured_outputs.json"),
        ):
            checks += bad_request(chat(**body), param)
        n_masks = metric(port, "nvfp4_constrained_masks_total")
        secs = metric(port, "nvfp4_constrained_mask_seconds_total")
        assert n_masks > 0
        refused = metric(port, "nvfp4_constrained_mask_refusals_total")
        print(f"  {int(n_masks)} token masks, {1e3 * secs / n_masks:.3f} ms each on average; "
              f"{int(refused)} picks the mask allowed and the grammar refused")
    finally:
        stop(p)
    print(f"test_serve_grammar: {checks} checks passed (jsonschema {jsonschema.__version__}, lark {lark.__version__})")


if __name__ == "__main__":
    main()

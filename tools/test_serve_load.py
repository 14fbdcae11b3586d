#!/usr/bin/env python3
"""A bounded load test of `nvfp4 serve` with the official OpenAI Python client (PyPI `openai`).

    python tools/test_serve_load.py build/nvfp4 MODEL.gguf [--requests 200] [--concurrency 8] [serve flags...]

Starts the server on 127.0.0.1 (a free port, --parallel = the concurrency), runs each of 24 distinct
requests alone (chat and completions, greedy and seeded sampling, prompts of 3 to ~120 tokens,
max_tokens 2..14), then --requests of them (cycled; every third streamed, with include_usage) from
--concurrency client threads. Checks that every response is complete (a finish reason; usage;
max_tokens tokens unless it stopped) and equals, text and token count, the same request run alone.
Prints throughput and p50/p99 latency as one JSON line. Exit 0 when every check passes; bounded
(the server is killed after --limit seconds, default 300).
"""
import argparse
import concurrent.futures as cf
import json
import signal
import subprocess
import sys
import threading
import time

import openai

from test_serve_openai import start

TEXTS = ["The capital of France is", "def add(a, b):", "Once upon a time, in a small village by the sea,",
         "List three fruits:", "Water boils at", "The quick brown fox",
         " ".join(["The history of bread goes back thousands of years, to the first farmers."] * 6),
         "Translate to French: good morning"]


def specs():
    out = []
    for i in range(24):
        s = {"chat": i % 2 == 0, "text": TEXTS[i % len(TEXTS)] + ("" if i < 8 else f" (variant {i})"),
             "max_tokens": 2 + (i * 5) % 13}
        if i % 3 == 0:
            s.update(temperature=0.8, seed=100 + i, top_p=0.95)
        else:
            s.update(temperature=0)
        out.append(s)
    return out


def call(c, name, s, stream):
    kw = {"model": name, "max_tokens": s["max_tokens"], "temperature": s["temperature"]}
    if "seed" in s:
        kw.update(seed=s["seed"], top_p=s["top_p"])
    t0 = time.time()
    text, finish, usage, first = "", None, None, None
    if s["chat"]:
        msgs = [{"role": "user", "content": s["text"]}]
        if not stream:
            r = c.chat.completions.create(messages=msgs, **kw)
            text, finish, usage = r.choices[0].message.content, r.choices[0].finish_reason, r.usage
        else:
            for ch in c.chat.completions.create(messages=msgs, stream=True, stream_options={"include_usage": True}, **kw):
                if ch.usage:
                    usage = ch.usage
                if ch.choices:
                    if ch.choices[0].delta.content:
                        first = first or time.time()
                        text += ch.choices[0].delta.content
                    finish = ch.choices[0].finish_reason or finish
    else:
        if not stream:
            r = c.completions.create(prompt=s["text"], **kw)
            text, finish, usage = r.choices[0].text, r.choices[0].finish_reason, r.usage
        else:
            for ch in c.completions.create(prompt=s["text"], stream=True, stream_options={"include_usage": True}, **kw):
                if ch.usage:
                    usage = ch.usage
                if ch.choices:
                    if ch.choices[0].text:
                        first = first or time.time()
                    text += ch.choices[0].text
                    finish = ch.choices[0].finish_reason or finish
    t1 = time.time()
    return {"text": text, "finish": finish, "completion_tokens": usage.completion_tokens if usage else None,
            "latency": t1 - t0, "ttft": (first - t0) if first else None}


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--limit", type=float, default=300)
    a, extra = ap.parse_known_args()
    p, port = start(a.binary, a.model, ["--queue", str(4 * a.concurrency)] + extra, parallel=a.concurrency)
    killer = threading.Timer(a.limit, p.kill)
    killer.start()
    failures = []
    try:
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=120)
        name = c.models.list().data[0].id
        sp = specs()
        alone = [call(c, name, s, False) for s in sp]
        t0 = time.time()
        with cf.ThreadPoolExecutor(a.concurrency) as ex:
            futs = [ex.submit(call, c, name, sp[i % len(sp)], i % 3 == 1) for i in range(a.requests)]
            got = [f.result() for f in futs]
        wall = time.time() - t0
        for i, g in enumerate(got):
            s, ref = sp[i % len(sp)], alone[i % len(sp)]
            if g["finish"] not in ("stop", "length") or g["completion_tokens"] is None:
                failures.append(f"request {i}: incomplete {g}")
            elif g["finish"] == "length" and g["completion_tokens"] != s["max_tokens"]:
                failures.append(f"request {i}: {g['completion_tokens']} tokens, max_tokens {s['max_tokens']}")
            elif (g["text"], g["completion_tokens"], g["finish"]) != (ref["text"], ref["completion_tokens"], ref["finish"]):
                failures.append(f"request {i} (stream {i % 3 == 1}): {g['text']!r} != alone {ref['text']!r}")
        lat = [g["latency"] for g in got]
        ttft = [g["ttft"] for g in got if g["ttft"] is not None]
        toks = sum(g["completion_tokens"] or 0 for g in got)
        print(json.dumps({"test": "serve_load", "requests": a.requests, "concurrency": a.concurrency,
                          "wall_s": round(wall, 2), "requests_per_s": round(a.requests / wall, 2),
                          "generated_tokens": toks, "generated_tokens_per_s": round(toks / wall, 1),
                          "latency_p50_s": round(pct(lat, 50), 3), "latency_p99_s": round(pct(lat, 99), 3),
                          "ttft_stream_p50_s": round(pct(ttft, 50), 3) if ttft else None,
                          "mismatches": len(failures), "openai": openai.__version__}))
    finally:
        killer.cancel()
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = -9
    for f in failures[:20]:
        print("FAIL", f, file=sys.stderr)
    if failures or rc != 0:
        raise SystemExit(f"test_serve_load: {len(failures)} failures, server exit {rc}")
    print(f"test_serve_load: {a.requests} requests at concurrency {a.concurrency} complete and equal to each alone")


if __name__ == "__main__":
    main()

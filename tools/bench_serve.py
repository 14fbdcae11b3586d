#!/usr/bin/env python3
"""`bench serve`: aggregate generation tokens/s and latency of `nvfp4 serve` at several client
concurrencies, beside llama.cpp's server (PyPI llama-cpp-python's `llama_cpp.server`) on the same
GGUF and threads, both through the official OpenAI client.

    python tools/bench_serve.py build/nvfp4 MODEL.gguf [--levels 1,4,8] [--tokens 32] [--threads 2]
        [--peer-python PYTHON] [--nvfp4-flags=--quantize] [--out out.jsonl]

Each level sends max(4, 2 x concurrency) streamed greedy chat completions (distinct prompts,
max_tokens --tokens; both servers apply the GGUF's chat template) from that many client threads and measures wall time, completion tokens (usage, or
content chunks where the server sends no usage), the latency and the time to the first token.
The clients start together (every request of a wave arrives in the same instant); with --stagger
the levels above 1 run once more with client k starting k x (single-stream latency / concurrency)
late, so that requests arrive one at a time while the others decode (continuous batching's steady
state; the wall time then includes the ramp, so take its throughput from the first pass).
`nvfp4 serve` runs with --parallel = the highest level; llama_cpp.server serves one request at a
time (its design), with --interrupt_requests False (by default a new request cuts the running
stream short). One JSON line per (server, level), then a table. --peer-python is a Python with
llama_cpp and its server extras (uvicorn, fastapi, sse-starlette, starlette-context,
pydantic-settings); without it only nvfp4 runs. The figures depend on the machine's load.
"""
import argparse
import concurrent.futures as cf
import json
import socket
import subprocess
import sys
import time
import urllib.request

import openai

from test_serve_openai import start


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one(c, name, i, tokens):
    t0 = time.time()
    first, chunks, usage = None, 0, None
    msgs = [{"role": "user", "content": f"Write a short story about a robot named R{i}."}]
    for ch in c.chat.completions.create(model=name, messages=msgs, max_tokens=tokens, temperature=0, stream=True,
                                        stream_options={"include_usage": True}):
        if getattr(ch, "usage", None):
            usage = ch.usage
        if ch.choices and ch.choices[0].delta.content:
            first = first or time.time()
            chunks += 1
    t1 = time.time()
    n = usage.completion_tokens if usage else chunks
    return {"tokens": n, "latency": t1 - t0, "ttft": (first or t1) - t0}


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def staggered(c, name, conc, n, tokens, offset):
    """conc clients, client k starting k * offset seconds late, each sending its share of the n
    requests one after another: a steady state where requests arrive while the others decode."""
    def client(k):
        time.sleep(k * offset)
        return [one(c, name, i, tokens) for i in range(k, n, conc)]
    with cf.ThreadPoolExecutor(conc) as ex:
        return [g for part in ex.map(client, range(conc)) for g in part]


def run_levels(server, url, key, levels, tokens, stagger=False):
    c = openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=600)
    name = c.models.list().data[0].id
    one(c, name, 999, 4)  # warm-up
    rows = []
    single = None  # the single stream's p50 latency: the stagger is single / concurrency
    for conc in levels:
        n = max(4, 2 * conc)
        t0 = time.time()
        if stagger and conc > 1 and single:
            got = staggered(c, name, conc, n, tokens, single / conc)
        else:
            with cf.ThreadPoolExecutor(conc) as ex:
                got = list(ex.map(lambda i: one(c, name, i, tokens), range(n)))
        wall = time.time() - t0
        toks = sum(g["tokens"] for g in got)
        if conc == 1:
            single = pct([g["latency"] for g in got], 50)
        row = {"server": server, "concurrency": conc, "requests": n, "max_tokens": tokens,
               "arrivals": "staggered" if stagger and conc > 1 else "together",
               "generated_tokens": toks, "wall_s": round(wall, 2), "gen_tokens_per_s": round(toks / wall, 1),
               "latency_p50_s": round(pct([g["latency"] for g in got], 50), 3),
               "ttft_p50_s": round(pct([g["ttft"] for g in got], 50), 3)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("--levels", default="1,4,8")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer-python")
    ap.add_argument("--nvfp4-flags", default="")
    ap.add_argument("--out")
    ap.add_argument("--stagger", action="store_true",
                    help="also run every level > 1 with the clients' starts spread over one single-stream latency")
    a = ap.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    rows = []
    p, port = start(a.binary, a.model, a.nvfp4_flags.split(), parallel=max(levels), threads=a.threads)
    try:
        rows += run_levels("nvfp4 serve", f"http://127.0.0.1:{port}/v1", "k", levels, a.tokens)
        if a.stagger:
            rows += run_levels("nvfp4 serve", f"http://127.0.0.1:{port}/v1", "k", levels, a.tokens, stagger=True)
    finally:
        p.terminate()
        p.wait(60)
    if a.peer_python:
        port = free_port()
        q = subprocess.Popen([a.peer_python, "-m", "llama_cpp.server", "--model", a.model, "--host", "127.0.0.1",
                              "--port", str(port), "--n_threads", str(a.threads), "--n_threads_batch", str(a.threads),
                              "--n_ctx", "2048", "--interrupt_requests", "False"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models")
                    break
                except Exception:
                    time.sleep(0.2)
            rows += run_levels("llama_cpp.server", f"http://127.0.0.1:{port}/v1", "none", levels, a.tokens)
        finally:
            q.terminate()
            q.wait(60)
    if a.out:
        with open(a.out, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    print("\n| server | arrivals | concurrency | requests | gen tok/s | p50 latency s | p50 TTFT s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['server']} | {r['arrivals']} | {r['concurrency']} | {r['requests']} | {r['gen_tokens_per_s']} | "
              f"{r['latency_p50_s']} | {r['ttft_p50_s']} |")


if __name__ == "__main__":
    sys.exit(main())

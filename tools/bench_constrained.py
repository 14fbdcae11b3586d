#!/usr/bin/env python3
"""The cost of constrained output in `nvfp4 serve`: the same greedy requests with and without a
JSON schema, one at a time and at a concurrency, in interleaved rounds on one server, through PyPI's
openai client (issue 31's speed bars: constrained decoding within 10% of generation speed, and at
concurrency 8 at least 90% of the unconstrained throughput).

    python tools/bench_constrained.py build/nvfp4 MODEL.gguf [--threads 2] [--tokens 128]
        [--rounds 3] [--concurrency 8] [--schema story|person] [--nvfp4-flags=--quantize] [--out out.json]

The default schema (story) is an object with one string of at least --min-chars characters, so a
constrained request writes JSON until max_tokens ends it ("length"), as the unconstrained one writes
prose: both decode about --tokens tokens. `--schema person` is test_serve_structured.py's nine-key
object instead (structure every few tokens; the request ends with the object). One at a time the figure is the decode rate of a streamed request (tokens
after the first over the time from the first to the last); at the concurrency, completion tokens
of all requests over the wave's wall time. The mask's own time per constrained token comes from the
server's /metrics (nvfp4_constrained_mask_seconds_total / nvfp4_constrained_masks_total). Each
round runs every case once, the order alternating between rounds; the table gives the median and
the spread (min-max) of the rounds, and the ratios constrained / unconstrained of the medians.
The figures depend on the machine's load: compare within one run.
"""
import argparse
import concurrent.futures as cf
import json
import re
import statistics
import sys
import time
import urllib.request

import openai

from test_serve_openai import start


def schema(kind, min_chars):
    if kind == "person":  # tools/test_serve_structured.py's: keys, enums, a const, a pattern, a $ref, arrays
        from test_serve_structured import PERSON
        return {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON}}
    return {"type": "json_schema", "json_schema": {"name": "story", "strict": True, "schema": {
        "type": "object", "additionalProperties": False, "required": ["title", "story"],
        "properties": {"title": {"type": "string", "maxLength": 40},
                       "story": {"type": "string", "minLength": min_chars}}}}}


def metrics(port):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": "Bearer k"})
    text = urllib.request.urlopen(req).read().decode()
    out = {}
    for name in ("nvfp4_constrained_masks_total", "nvfp4_constrained_mask_seconds_total"):
        m = re.search(rf"^{name}(?:{{[^}}]*}})? ([0-9.eE+-]+)$", text, re.M)
        out[name] = float(m.group(1)) if m else 0.0
    return out


def one(c, name, i, tokens, fmt):
    msgs = [{"role": "user", "content": f"Write a short story about a robot named R{i}, as JSON."}]
    kw = {"response_format": fmt} if fmt else {}
    t0 = time.time()
    times, usage = [], None
    for ch in c.chat.completions.create(model=name, messages=msgs, max_tokens=tokens, temperature=0, stream=True,
                                        stream_options={"include_usage": True}, **kw):
        if getattr(ch, "usage", None):
            usage = ch.usage
        if ch.choices and ch.choices[0].delta.content:
            times.append(time.time())
    n = usage.completion_tokens if usage else len(times)
    return {"tokens": n, "chunks": len(times), "first": times[0] if times else None,
            "last": times[-1] if times else None, "t0": t0}


def decode_rate(r):
    # Tokens after the first over the time between the first and the last content chunk.
    if r["chunks"] < 2 or r["last"] <= r["first"]:
        return float("nan")
    return (r["tokens"] - 1) / (r["last"] - r["first"])


def spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "all": xs}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--min-chars", type=int, default=2000)
    ap.add_argument("--schema", choices=["story", "person"], default="story",
                    help="story: one long string (the request runs to max_tokens); person: test_serve_structured's "
                         "nine-key object (structure in every few tokens; the request ends with the object)")
    ap.add_argument("--nvfp4-flags", default="")
    ap.add_argument("--out")
    a = ap.parse_args()
    extra = a.nvfp4_flags.split() if a.nvfp4_flags else []
    p, port = start(a.binary, a.model, extra, parallel=a.concurrency, threads=a.threads)
    res = {k: [] for k in ("free_1", "schema_1", "free_n", "schema_n", "mask_ms")}
    toks = {k: [] for k in ("free_1", "schema_1", "free_n", "schema_n")}
    try:
        c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=600)
        name = c.models.list().data[0].id
        fmt = schema(a.schema, a.min_chars)
        one(c, name, 0, 8, None)  # warm-up
        one(c, name, 0, 8, fmt)
        for r in range(a.rounds):
            order = [None, fmt] if r % 2 == 0 else [fmt, None]
            for f in order:
                key = "schema" if f else "free"
                m0 = metrics(port)
                x = one(c, name, r, a.tokens, f)
                m1 = metrics(port)
                res[key + "_1"].append(decode_rate(x))
                toks[key + "_1"].append(x["tokens"])
                if f:
                    dm = m1["nvfp4_constrained_masks_total"] - m0["nvfp4_constrained_masks_total"]
                    ds = m1["nvfp4_constrained_mask_seconds_total"] - m0["nvfp4_constrained_mask_seconds_total"]
                    res["mask_ms"].append(1e3 * ds / dm if dm else float("nan"))
            for f in order:
                key = "schema" if f else "free"
                t0 = time.time()
                with cf.ThreadPoolExecutor(a.concurrency) as ex:
                    outs = list(ex.map(lambda i: one(c, name, 100 * r + i, a.tokens, f), range(a.concurrency)))
                wall = time.time() - t0
                n = sum(o["tokens"] for o in outs)
                res[key + "_n"].append(n / wall)
                toks[key + "_n"].append(n)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in res.items()), file=sys.stderr)
    finally:
        p.terminate()
        p.wait()
    out = {"model": a.model, "schema": a.schema, "threads": a.threads, "tokens": a.tokens, "concurrency": a.concurrency,
           "flags": a.nvfp4_flags, "rounds": a.rounds, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           **{k: spread(v) for k, v in res.items()}, "completion_tokens": toks}
    out["ratio_1"] = out["schema_1"]["median"] / out["free_1"]["median"]
    out["ratio_n"] = out["schema_n"]["median"] / out["free_n"]["median"]
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(out, fh, indent=1)
    print(f"| {a.model} | {a.schema} | -t {a.threads} | one at a time: {out['free_1']['median']:.1f} "
          f"({out['free_1']['min']:.1f}-{out['free_1']['max']:.1f}) / {out['schema_1']['median']:.1f} "
          f"({out['schema_1']['min']:.1f}-{out['schema_1']['max']:.1f}) tok/s, ratio {out['ratio_1']:.3f} | "
          f"mask {out['mask_ms']['median']:.3f} ms/token | concurrency {a.concurrency}: "
          f"{out['free_n']['median']:.1f} ({out['free_n']['min']:.1f}-{out['free_n']['max']:.1f}) / "
          f"{out['schema_n']['median']:.1f} ({out['schema_n']['min']:.1f}-{out['schema_n']['max']:.1f}) tok/s, "
          f"ratio {out['ratio_n']:.3f} |")


if __name__ == "__main__":
    main()

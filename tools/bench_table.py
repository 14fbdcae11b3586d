#!/usr/bin/env python3
"""Turns `nvfp4 bench kernels --json` output (one object per line) into the Markdown tables of
docs/BENCHMARKS.md: one row per (shape, n, threads), DRAM and cache side by side.

usage: python3 tools/bench_table.py run.jsonl > table.md
"""
import json
import sys


def fmt(v, nd=3):
    return "n/a" if v is None else f"{v:.{nd}f}"


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip().startswith("{")]
    cases = {}
    for r in rows:
        key = (r["mode"], r["n_out"], r["n_in"], r["n"], r["threads"])
        cases.setdefault(key, {})[r["residency"]] = r
    print("| kernel | shape | N | thr | DRAM ms (min-max) | GB/s | % DRAM bw (bw) | ggml DRAM ms | x ggml |"
          " cache ms (min-max) | ns/blk/col | ggml cache ms | x ggml |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(cases, key=lambda k: (k[0], -k[1] * k[2], k[1], k[2], k[4], k[3])):
        c = cases[key]
        d, h = c.get("dram"), c.get("cache")
        k = (d or h)["kernel"]
        cells = [k, f"{key[1]}x{key[2]}", str(key[3]), str(key[4])]
        if d:
            cells += [f"{d['median_ms']:.3f} ({d['min_ms']:.3f}-{d['max_ms']:.3f})", f"{d['weight_gbps']:.1f}",
                      f"{d['pct_dram']:.0f}% ({d['dram_gbps']:.1f})", fmt(d["ggml_median_ms"]),
                      fmt(d["ratio_vs_ggml"], 1)]
        else:
            cells += ["-"] * 5
        if h:
            cells += [f"{h['median_ms']:.3f} ({h['min_ms']:.3f}-{h['max_ms']:.3f})", f"{h['ns_per_block_col']:.2f}",
                      fmt(h["ggml_median_ms"]), fmt(h["ratio_vs_ggml"], 1)]
        else:
            cells += ["-"] * 4
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])

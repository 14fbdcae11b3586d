#!/usr/bin/env python3
"""Turns `nvfp4 bench kernels --json` output (one object per line) into the Markdown tables of
docs/BENCHMARKS.md: one row per (shape, n, threads), DRAM and cache side by side.

usage: python3 tools/bench_table.py run.jsonl [--targets] > table.md
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


def targets(path):
    """The issue's targets, read off the same run."""
    rows = [json.loads(line) for line in open(path) if line.strip().startswith("{")]

    def pick(**kw):
        return [r for r in rows if all(r[k] == v for k, v in kw.items())]

    print("\n| target | case | measured | met |")
    print("|---|---|---|---|")
    for r in pick(n=1, residency="dram"):
        ok = r["pct_dram"] >= 90
        print(f"| N=1 streaming >= 90% of DRAM read bw | {r['n_out']}x{r['n_in']} {r['threads']}T |"
              f" {r['pct_dram']:.0f}% ({r['weight_gbps']:.1f} of {r['dram_gbps']:.1f} GB/s) | {'yes' if ok else 'no'} |")
    for res in ("dram", "cache"):
        for r in pick(n=8, residency=res):
            if r["ratio_vs_ggml"] is None:
                continue
            print(f"| N=8 >= 8x ggml ({res}) | {r['n_out']}x{r['n_in']} {r['threads']}T |"
                  f" {r['ratio_vs_ggml']:.1f}x ({r['median_ms']:.2f} vs {r['ggml_median_ms']:.2f} ms) |"
                  f" {'yes' if r['ratio_vs_ggml'] >= 8 else 'no'} |")
    for n, bound in ((1, 0.65), (8, 0.40)):
        for r in pick(n=n, residency="cache", threads=1):
            print(f"| cache, 1T, N={n}: <= {bound} ns/block/col | {r['n_out']}x{r['n_in']} |"
                  f" {r['ns_per_block_col']:.2f} ns | {'yes' if r['ns_per_block_col'] <= bound else 'no'} |")
    for r in pick(n=512):
        if r["ratio_vs_ggml"] is None:
            continue
        print(f"| prefill N=512 >= 8x ggml ({r['residency']}) | {r['n_out']}x{r['n_in']} {r['threads']}T |"
              f" {r['ratio_vs_ggml']:.1f}x | {'yes' if r['ratio_vs_ggml'] >= 8 else 'no'} |")


if __name__ == "__main__":
    main(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "--targets":
        targets(sys.argv[1])

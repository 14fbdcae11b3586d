#!/usr/bin/env python3
"""Markdown tables of docs/BENCHMARKS.md from the JSON lines of scripts/bench-model.sh and
scripts/quality-table.sh:

  python3 tools/model_tables.py --bench docs/bench-model-DATE.jsonl --quality docs/quality-DATE.jsonl
"""
import argparse
import json


def cell(d, k):
    if not isinstance(d, dict) or d.get(k) is None:
        return "n/a"
    return f"{d[k]:.1f} ({d[k + '_min']:.1f}-{d[k + '_max']:.1f})"


def bench_table(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("| KV | engine | prompt t/s (512) | generation t/s (128) |")
    print("|---|---|---|---|")
    for j in rows:
        kv = j.get("kv", "f32")
        print(f"| {kv} | nvfp4 {j['precision']} | {cell(j, 'prompt_tps')} | {cell(j, 'gen_tps')} |")
        print(f"| {kv} | llama.cpp, same NVFP4 GGUF | {cell(j.get('llama_cpp_nvfp4'), 'prompt_tps')} | "
              f"{cell(j.get('llama_cpp_nvfp4'), 'gen_tps')} |")
        print(f"| {kv} | llama.cpp, its Q4_0 | {cell(j.get('llama_cpp_q4_0'), 'prompt_tps')} | "
              f"{cell(j.get('llama_cpp_q4_0'), 'gen_tps')} |")
    print()
    print("| KV | prompt vs llama.cpp NVFP4 | generation vs llama.cpp NVFP4 | DRAM GB/s | roofline t/s | generation / roofline |")
    print("|---|---|---|---|---|---|")
    for j in rows:
        pv = j.get("prompt_vs_llama_cpp_nvfp4")
        gv = j.get("gen_vs_llama_cpp_nvfp4")
        print(f"| {j.get('kv', 'f32')} | {pv:.2f}x | {gv:.2f}x | {j['dram_gbps']:.1f} | "
              f"{j['roofline_gen_tps']:.1f} | {j['roofline_pct']:.1f} % |" if pv else
              f"| {j.get('kv', 'f32')} | n/a | n/a | {j['dram_gbps']:.1f} | {j['roofline_gen_tps']:.1f} | "
              f"{j['roofline_pct']:.1f} % |")


def quality_table(path):
    print("| weights, mode | same top % | KL mean | KL p99 | PPL | PPL of the reference |")
    print("|---|---|---|---|---|---|")
    for line in open(path):
        if not line.strip():
            continue
        j = json.loads(line)
        print(f"| {j['row']} | {j['same_top_pct']:.2f} | {j['kl_mean']:.3f} | {j['kl_p99']:.3f} | "
              f"{j['ppl']:.2f} | {j['ppl_ref']:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench")
    ap.add_argument("--quality")
    a = ap.parse_args()
    if a.bench:
        bench_table(a.bench)
        print()
    if a.quality:
        quality_table(a.quality)


if __name__ == "__main__":
    main()

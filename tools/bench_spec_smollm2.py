#!/usr/bin/env python3
"""Speculative decoding on the bundled SmolLM2-135M-Instruct, side by side (docs/BENCHMARKS.md):
plain decoding, prompt lookup (--spec ngram) and the trained MTP head (fixtures/mtp) at the given
settings, each `nvfp4 run --chat --json` in interleaved rounds over the same prompts (held out of
the head's training: tools/train_mtp_smollm2.py's CHAT_EVAL and three more).

    python3 tools/bench_spec_smollm2.py [--rounds 3] [-n 128] [-t 2] [--model GGUF [--no-quantize]]
                                        [--variant NAME=ARGS ...]

Prints, per variant, generation tok/s median (min-max) over every run, the median of the per-prompt
ratios to plain decoding of the same round, acceptance (min-max), runs backed off, and whether every
variant's text equals plain decoding's (it must: greedy, a16q8).
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROMPTS = ["Write a short poem about the sea.",
           "Explain what a Python list comprehension is, with an example.",
           "What are three good habits for staying healthy?",
           "Describe how a bicycle works.",
           "Give me a recipe for a simple tomato soup.",
           "What is the difference between a compiler and an interpreter?",
           "Explain how a hash table works.",
           "Tell me a short story about a lighthouse keeper.",
           "Why do leaves change color in autumn?"]
MTP = str(ROOT / "fixtures" / "mtp" / "smollm2_mtp.gguf")
DEFAULT_VARIANTS = {
    "plain": "",
    "ngram": "--spec ngram --draft-max 3",
    "mtp k=1": f"--mtp {MTP} --draft-max 1 --spec-allow-low-acceptance",
    "mtp k=1 vocab 8192": f"--mtp {MTP} --draft-max 1 --draft-vocab 8192 --spec-allow-low-acceptance",
    "mtp k=2 vocab 8192": f"--mtp {MTP} --draft-max 2 --draft-vocab 8192 --spec-allow-low-acceptance",
}


def run(binary, model, prompt, n, threads, extra, quantize):
    cmd = [binary, "run", "-m", model] + (["--quantize"] if quantize else []) + [
        "--chat", "-p", prompt, "-n", str(n), "-t", str(threads), "--json"] + shlex.split(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=str(ROOT / "build" / "nvfp4"))
    ap.add_argument("--model", default=None)
    ap.add_argument("--no-quantize", action="store_true",
                    help="run the model as stored (an NVFP4 GGUF such as the quickstart's), not quantized at load")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=len(PROMPTS))
    ap.add_argument("--variant", action="append", default=[], help="NAME=ARGS (replaces the defaults but plain)")
    a = ap.parse_args()
    model = a.model or subprocess.check_output(["bash", str(ROOT / "scripts" / "model-path.sh")], text=True).strip()
    variants = {"plain": ""}
    if a.variant:
        for v in a.variant:
            k, _, args = v.partition("=")
            variants[k] = args
    else:
        variants = dict(DEFAULT_VARIANTS)
    res = {k: [] for k in variants}
    for rnd in range(a.rounds):
        for pi, prompt in enumerate(PROMPTS[:a.prompts]):
            plain = None
            for k, extra in variants.items():
                j = run(a.binary, model, prompt, a.n, a.t, extra, not a.no_quantize)
                if k == "plain":
                    plain = j
                res[k].append((j, plain))
            print(f"round {rnd + 1}/{a.rounds}, prompt {pi + 1}/{a.prompts}", file=sys.stderr, flush=True)
    print("| decoding | gen tok/s median (min-max) | vs plain (median of pairs) | acceptance median (min-max) "
          "| backed off | text == plain |")
    print("| --- | --- | --- | --- | --- | --- |")
    for k, rows in res.items():
        tps = [j["gen_tps"] for j, _ in rows]
        ratio = statistics.median(j["gen_tps"] / p["gen_tps"] for j, p in rows)
        spec = [j.get("speculative") for j, _ in rows]
        acc = [s["acceptance"] for s in spec if s]
        off = sum(1 for s in spec if s and s.get("backed_off"))
        same = all(j["text"] == p["text"] for j, p in rows)
        acc_s = f"{statistics.median(acc):.2f} ({min(acc):.2f}-{max(acc):.2f})" if acc else ""
        print(f"| {k} | {statistics.median(tps):.1f} ({min(tps):.1f}-{max(tps):.1f}) | {ratio:.2f} | {acc_s} | "
              f"{off if acc else ''}{f' of {len(rows)}' if acc else ''} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()

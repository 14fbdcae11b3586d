#!/usr/bin/env python3
"""llama.cpp as the judge of `nvfp4 convert`'s GGUF output: each case is converted with
`nvfp4 convert IN out.gguf` (HF directory or GGUF in), loaded by PyPI llama-cpp-python (the peer
scripts/setup-bench-peer.sh builds), and run greedily on a few prompts beside
`nvfp4 run -m out.gguf --precision f32`. llama.cpp is given our prompt token ids (so the
comparison is of the models), and its own tokenization of the prompt is compared too.

Prints a table: case, loaded by llama.cpp, prompts whose tokenization agrees, prompts whose greedy
tokens agree, the first difference. Exit status 1 when a case fails to load or differs.

Run: build-peer/venv/bin/python tools/check_llamacpp_interop.py [--nvfp4 build/nvfp4] [-n 8]
         [--prompt TEXT]... NAME=IN[,--tokenizer=FILE.gguf]...
  no case given: the tiny fixtures/hf/{float,modelopt,ct} with fixtures/hf/tokenizer32.gguf.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
TINY_PROMPTS = ["ab ab abc", "the cat, a dog.", "zzz abab"]
PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, there was a"]


def run_ours(nvfp4, gguf_path, prompt, n):
    r = subprocess.run([nvfp4, "run", "-m", gguf_path, "--precision", "f32", "-p", prompt, "-n", str(n),
                        "-t", "2", "--ctx", "256", "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nvfp4 run failed: {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout)


def greedy_llama(llm, ids, n):
    import llama_cpp
    llm.reset()
    llm.eval(ids)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    out = []
    for _ in range(n):
        t = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        if llama_cpp.llama_vocab_is_eog(vocab, t):
            break
        out.append(t)
        if len(out) == n:
            break
        llm.eval([t])
    return out


def worker(gguf_path, job_path):
    """In a child process (ggml aborts the process on what it cannot run): loads GGUF_PATH with
    llama.cpp and, for each (prompt, our prompt ids), prints llama.cpp's tokenization and greedy ids."""
    import llama_cpp
    job = json.load(open(job_path))
    llm = llama_cpp.Llama(model_path=gguf_path, n_ctx=256, n_batch=256, logits_all=True, verbose=False,
                          n_threads=2, seed=0)
    res = []
    for p, ids in job["prompts"]:
        # add_bos=True: llama.cpp adds BOS when the GGUF's tokenizer.ggml.add_bos_token says so.
        tok = llm.tokenize(p.encode(), add_bos=True, special=True)
        res.append(dict(tokens=tok, greedy=greedy_llama(llm, ids, job["n"])))
    print(json.dumps(res))


def check_case(args, name, src, extra, workdir):
    out = os.path.join(workdir, name + ".gguf")
    t0 = time.time()
    r = subprocess.run([args.nvfp4, "convert", src, out] + extra, capture_output=True, text=True)
    if r.returncode != 0:
        return dict(case=name, loaded="convert failed", detail=r.stderr.strip()[-300:])
    conv_s = time.time() - t0
    prompts = args.prompt or (TINY_PROMPTS if "tokenizer32" in " ".join(extra) else PROMPTS)
    ours = [run_ours(args.nvfp4, out, p, args.n) for p in prompts]
    job = os.path.join(workdir, name + ".job.json")
    json.dump(dict(n=args.n, prompts=[[p, o["prompt_ids"]] for p, o in zip(prompts, ours)]), open(job, "w"))
    w = subprocess.run([sys.executable, __file__, "--worker", out, job], capture_output=True, text=True)
    if w.returncode != 0:
        tail = [l for l in w.stderr.strip().splitlines() if l.strip()][-1:] or [f"exit {w.returncode}"]
        return dict(case=name, loaded="no", detail=tail[0][-200:])
    theirs = json.loads(w.stdout.strip().splitlines()[-1])
    tok_same = gen_same = 0
    detail = ""
    for p, o, t in zip(prompts, ours, theirs):
        if t["tokens"] == o["prompt_ids"]:
            tok_same += 1
        elif not detail:
            detail = f"tokens of {p!r}: ours {o['prompt_ids'][:12]} llama.cpp {t['tokens'][:12]}"
        if t["greedy"] == o["ids"]:
            gen_same += 1
        elif not detail:
            detail = f"greedy after {p!r}: ours {o['ids']} llama.cpp {t['greedy']}"
    size_mb = os.path.getsize(out) / 2**20
    return dict(case=name, loaded="yes", tok=f"{tok_same}/{len(prompts)}", gen=f"{gen_same}/{len(prompts)}",
                detail=detail or f"{size_mb:.1f} MiB, converted in {conv_s:.1f} s; greedy e.g. {ours[0]['ids']}",
                ok=tok_same == gen_same == len(prompts))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nvfp4", default=str(ROOT / "build" / "nvfp4"))
    ap.add_argument("-n", type=int, default=8, help="tokens to generate")
    ap.add_argument("--prompt", action="append", help="prompt (repeatable)")
    ap.add_argument("cases", nargs="*", help="NAME=IN[,--option=value...] (options passed to nvfp4 convert)")
    args = ap.parse_args()
    cases = args.cases or [f"tiny-{f}=fixtures/hf/{f},--tokenizer=fixtures/hf/tokenizer32.gguf"
                           for f in ("float", "modelopt", "ct")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="nvfp4-llamacpp-") as wd:
        for c in cases:
            name, rest = c.split("=", 1)
            parts = rest.split(",")
            src = parts[0] if os.path.isabs(parts[0]) else str(ROOT / parts[0])
            extra = []
            for o in parts[1:]:
                k, _, v = o.partition("=")
                extra += [k] + ([v if os.path.isabs(v) or not os.path.exists(ROOT / v) else str(ROOT / v)] if v else [])
            rows.append(check_case(args, name, src, extra, wd))
    print(f"{'case':<22} {'llama.cpp loads':<16} {'same prompt tokens':<19} {'same greedy tokens':<19} detail")
    for r in rows:
        print(f"{r['case']:<22} {r['loaded'][:60]:<16} {r.get('tok', '-'):<19} {r.get('gen', '-'):<19} {r.get('detail', '')}")
    sys.exit(0 if all(r.get("ok") for r in rows) else 1)


if __name__ == "__main__":
    main()

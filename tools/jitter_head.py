#!/usr/bin/env python3
"""A float SmolLM2 whose tied head/embedding is off the Q8_0 grid, to measure what `--head q8`
costs on a true float head (docs/BENCHMARKS.md section 9b).

The bundled GGUF stores token_embd as Q8_0, so its float form (an HF directory of F32
safetensors, e.g. the one tools/gen_arch_fixtures.py writes from it) holds values q * d exactly on
the Q8_0 grid, where requantizing to Q8_0 is lossless. This adds to each value a uniform draw in
(-d/2, d/2), d = max|x| / 127 over its block of 32 (the block's Q8_0 step), so every value lies
anywhere in its cell, as a trained float head's do, and writes a new directory (the other files
copied). Fixed seed.

    python tools/jitter_head.py FLOAT_DIR OUT_DIR [--seed 0]
"""
import argparse
import pathlib
import shutil

import numpy as np
from safetensors.numpy import load_file, save_file


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    src, out = pathlib.Path(a.src), pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, out / f.name)
    t = load_file(str(src / "model.safetensors"))
    name = "model.embed_tokens.weight"
    x = t[name].astype(np.float32)
    b = x.reshape(-1, 32)
    d = np.abs(b).max(axis=1, keepdims=True) / 127.0
    rng = np.random.default_rng(a.seed)
    on_grid = np.mean(np.abs(b / np.where(d > 0, d, 1) - np.round(b / np.where(d > 0, d, 1))) < 1e-3)
    b = b + (rng.random(b.shape, dtype=np.float32) - 0.5) * d
    t[name] = b.reshape(x.shape).astype(np.float32)
    save_file(t, str(out / "model.safetensors"), metadata={"format": "pt"})
    print(f"{name}: {x.shape}, {100 * on_grid:.1f}% of values on the Q8_0 grid before; jittered by U(-d/2, d/2)")


if __name__ == "__main__":
    main()

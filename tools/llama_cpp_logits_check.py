#!/usr/bin/env python3
"""Loads a GGUF in llama.cpp (PyPI llama-cpp-python), evaluates a short prompt and checks that
every logit is finite and that they are not all equal. Prints the architecture, the expert
metadata and the logit range; exit 1 when a check fails.

  build-peer/venv/bin/python tools/llama_cpp_logits_check.py MODEL.gguf
"""
import sys

import llama_cpp
import numpy as np


def main():
    m = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_threads=1, logits_all=True, verbose=False)
    meta = {k: v for k, v in m.metadata.items()
            if "expert" in k or k.endswith(".block_count") or k == "general.architecture"}
    toks = m.tokenize(b"Hello world, this is", add_bos=False)
    m.eval(toks)
    lg = np.array(m.scores[:m.n_tokens])
    finite = bool(np.isfinite(lg).all())
    spread = float(lg.max() - lg.min()) if finite else float("nan")
    print(f"{sys.argv[1]}: {meta}; n_vocab {m.n_vocab()}, {len(toks)} tokens, logits finite {finite}, "
          f"range [{lg.min():.1f}, {lg.max():.1f}], top {int(lg[-1].argmax())}")
    return 0 if finite and spread > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

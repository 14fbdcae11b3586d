#!/usr/bin/env python3
"""The llama.cpp peer of scripts/bench-spec.sh: greedy generation from the given prompt ids through
PyPI `llama-cpp-python`, plain and with its prompt-lookup decoding (llama_speculative's
LlamaPromptLookupDecoding as the draft model: n-grams of up to --ngram-max tokens, --draft-max
tokens drafted), one after the other. Prints one JSON line per mode:
  {"mode": "plain"|"lookup", "gen_tps": ..., "ids": [...]}

  python tools/llama_cpp_spec_bench.py MODEL.gguf --ids 1,2,3 --n 128 --threads 2

gen_tps is measured as `nvfp4 run` measures it: (tokens - 1) / (time of the last token - time of
the first). Generation stops at an end-of-generation token (not emitted) or after --n tokens.
llama-cpp-python computes logits for every position when a draft model is set (logits_all), as it
must to verify drafts. Exit 3 with {"error": ...} when llama_cpp is missing or cannot load the file.
"""
import argparse
import json
import sys
import time


def run(llm, ids, n, is_eog):
    llm.reset()
    out, t_first, t_last = [], None, None
    for tok in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True):
        if is_eog(tok):
            break
        now = time.perf_counter()
        if t_first is None:
            t_first = now
        t_last = now
        out.append(int(tok))
        if len(out) >= n:
            break
    tps = (len(out) - 1) / (t_last - t_first) if len(out) > 1 and t_last > t_first else 0.0
    return out, tps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--ids", required=True, help="prompt token ids, comma-separated")
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--draft-max", type=int, default=8)
    ap.add_argument("--ngram-max", type=int, default=4)
    ap.add_argument("--modes", default="plain,lookup")
    a = ap.parse_args()
    try:
        import llama_cpp
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"error": f"llama_cpp unavailable: {e}"}))
        return 3
    ids = [int(x) for x in a.ids.split(",") if x]
    n_ctx = len(ids) + a.n + a.draft_max + 8
    for mode in a.modes.split(","):
        draft = LlamaPromptLookupDecoding(max_ngram_size=a.ngram_max, num_pred_tokens=a.draft_max) if mode == "lookup" else None
        try:
            llm = llama_cpp.Llama(model_path=a.model, n_ctx=n_ctx, n_batch=512, n_threads=a.threads,
                                  n_threads_batch=a.threads, draft_model=draft, verbose=False,
                                  # llama-cpp-python sets logits_all for a draft model itself, but
                                  # sizes its score rows from this argument (n_batch rows when False)
                                  logits_all=draft is not None)
        except Exception as e:  # noqa: BLE001
            print(json.dumps({"error": f"llama.cpp cannot load {a.model}: {e}"}))
            return 3
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        out, tps = run(llm, ids, a.n, lambda t: bool(llama_cpp.llama_vocab_is_eog(vocab, t)))
        print(json.dumps({"mode": mode, "gen_tps": tps, "ids": out, "llama_cpp": llama_cpp.__version__}), flush=True)
        del llm
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The llama.cpp peer of `nvfp4 bench model`: prompt and generation tokens/s of a GGUF through PyPI
`llama-cpp-python`, on the same token counts and threads. Prints one JSON line.

  python tools/llama_cpp_bench.py MODEL.gguf --prompt 512 --gen 128 --threads T --reps R
  python tools/llama_cpp_bench.py SRC.gguf --quantize-q4_0 DST.gguf   (llama.cpp's own Q4_0 of SRC)
  python tools/llama_cpp_bench.py SRC.gguf --quantize-nvfp4 DST.gguf  (ggml's own NVFP4 of SRC)
  add --embd-f16 to keep token_embd/output in F16, as `nvfp4 convert` does by default

Timings: prompt = one llama_decode of the whole prompt (batch = prompt), generation = greedy
single-token decodes; median over repeats. Exit 3 with {"error": ...} when llama_cpp is missing or
cannot load the file (e.g. a llama.cpp without NVFP4 support).
"""
import argparse
import json
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gen-varied", action="store_true",
                    help="feed the prompt's id formula onward instead of the greedy pick (routing that varies)")
    ap.add_argument("--quantize-q4_0")
    ap.add_argument("--quantize-nvfp4")
    ap.add_argument("--embd-f16", action="store_true")
    ap.add_argument("--kv", choices=["f16", "f32"], default="f16",
                    help="KV cache type (llama.cpp's default is f16)")
    a = ap.parse_args()
    try:
        import llama_cpp
        import numpy as np
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"error": f"llama_cpp unavailable: {e}"}))
        return 3
    if a.quantize_q4_0 or a.quantize_nvfp4:
        dst = a.quantize_q4_0 or a.quantize_nvfp4
        p = llama_cpp.llama_model_quantize_default_params()
        p.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0
        if a.quantize_nvfp4:
            # llama.cpp's quantizer has no NVFP4 file type yet (it refuses ftype 39); a tensor
            # type override puts every linear weight of the blocks through ggml's quantize_nvfp4.
            over = (llama_cpp.llama_model_tensor_override * 2)()
            over[0].pattern = rb"blk\.[0-9]+\.(attn_(q|k|v|output)|ffn_(gate|up|down))\.weight"
            over[0].type = getattr(llama_cpp, "GGML_TYPE_NVFP4", 40)
            over[1].pattern = None
            p.tt_overrides = over
        p.allow_requantize = True
        p.nthread = a.threads
        if a.embd_f16:
            p.token_embedding_type = llama_cpp.GGML_TYPE_F16
            p.output_tensor_type = llama_cpp.GGML_TYPE_F16
        rc = llama_cpp.llama_model_quantize(a.model.encode(), dst.encode(), p)
        print(json.dumps({"quantized": dst, "rc": rc}))
        return 0 if rc == 0 else 3
    try:
        kv_type = llama_cpp.GGML_TYPE_F16 if a.kv == "f16" else llama_cpp.GGML_TYPE_F32
        llm = llama_cpp.Llama(model_path=a.model, n_ctx=a.prompt + a.gen + 8, n_batch=a.prompt,
                              n_ubatch=a.prompt, n_threads=a.threads, n_threads_batch=a.threads,
                              type_k=kv_type, type_v=kv_type, logits_all=False, verbose=False)
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"error": f"llama.cpp cannot load {a.model}: {e}"}))
        return 3
    vocab = llm.n_vocab()
    prompt = [100 + (i * 7919) % (vocab - 200) for i in range(a.prompt)]
    pp, tg = [], []
    for _ in range(a.reps):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        pp.append(a.prompt / (time.perf_counter() - t0))
        tok = prompt[-1]
        t0 = time.perf_counter()
        for g in range(a.gen):
            llm.eval([tok])
            # The Llama object keeps no logits without logits_all; read the last row from the
            # context, as its sampler does.
            tok = int(np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(vocab,)).argmax())
            if a.gen_varied:
                tok = 100 + ((a.prompt + g) * 7919) % (vocab - 200)
        tg.append(a.gen / (time.perf_counter() - t0))
    print(json.dumps({"prompt_tps": statistics.median(pp), "gen_tps": statistics.median(tg),
                      "prompt_tps_min": min(pp), "prompt_tps_max": max(pp),
                      "gen_tps_min": min(tg), "gen_tps_max": max(tg), "kv": a.kv,
                      "llama_cpp": llama_cpp.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

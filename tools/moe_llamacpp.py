#!/usr/bin/env python3
"""llama.cpp's side of fixtures/moe/<arch> (run by tools/gen_moe_fixtures.py, or alone on an arch
directory it wrote):

1. llama.cpp's own convert_hf_to_gguf.py (the source tree of the PyPI llama-cpp-python peer,
   build-peer/llama-src/vendor/llama.cpp, with its gguf-py) converts float/ (--outtype bf16: the
   weights are bf16, so exact) and modelopt-nvfp4/ (its ModelOpt NVFP4 repack) into
   <arch>/llamacpp-float.gguf and <arch>/llamacpp-<form>.gguf for the NVFP4 forms of FORMS (where
   it can); float is converted a second time with --outtype f32 into a temporary file that is only
   run (ggml's BF16 matmul rounds the activations to bf16); modelopt-w4a16 and ct-nvfp4 are also
   converted (kept only where COMMITTED says). One thing is ours: our
   tokenizers are trained here, so the converter's pre-tokenizer hash check (get_vocab_base_pre)
   does not know them; it is answered with the pre-tokenizer of the family whose Split pattern
   they use (PRE below). Nothing else of the converter is touched.
2. gguf-py's GGUFReader lists what it wrote: metadata (tokenizer arrays left out) and tensors
   (name, shape in ggml order ne0.., type) -> <arch>/llamacpp.json.
3. llama-cpp-python (build-peer/venv) loads each GGUF (and the f32 one, "float-f32") and runs the 3 prompts of logits.json
   greedily (8 tokens, n_threads 1, no EOS stop), given our token ids; its logits at the prompt
   positions are compared with logits.f32 (max |diff| vs float and vs modelopt_nvfp4).
   -> <arch>/llamacpp_greedy.json, with transformers' float greedy tokens beside them.
A step that fails records its exact error instead.

Run: /work/tools-venv/v/bin/python tools/moe_llamacpp.py fixtures/moe/<arch> [...]
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
PEER = pathlib.Path(os.environ.get("NVFP4_BUILD_PEER", ROOT / "build-peer"))
LLAMA = PEER / "llama-src" / "vendor" / "llama.cpp"
PEER_PY = PEER / "venv" / "bin" / "python"
FORMS = ["float", "modelopt-nvfp4", "modelopt-w4a16", "ct-nvfp4"]
# GGUFs kept under fixtures/moe/<arch>/ (the others are converted in a temporary directory)
COMMITTED = {"*": ["float", "modelopt-nvfp4"], "qwen3_moe_i64": ["modelopt-nvfp4", "modelopt-w4a16"]}
PRE = {"qwen3_moe": "qwen2", "qwen3_moe_i64": "qwen2", "qwen2_moe": "qwen2", "olmoe": "qwen2", "mixtral": "llama-bpe"}
N_GREEDY = 8

CONVERT = r"""
import sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/gguf-py")
import conversion.base as base
pre = sys.argv[2]
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[3:]
convert_hf_to_gguf.main()
"""

WORKER = r"""
import json, sys
import numpy as np
import llama_cpp
gguf, job, out = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
llm = llama_cpp.Llama(model_path=gguf, n_ctx=256, n_batch=256, logits_all=True, verbose=False, n_threads=1, seed=0)
res, blobs = [], []
for ids in job["prompts"]:
    llm.reset()
    llm.eval(ids)
    blobs.append(np.asarray(llm.scores[:len(ids)], dtype=np.float32).copy())
    g = []
    for _ in range(job["n"]):
        t = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        g.append(t)
        if len(g) < job["n"]:
            llm.eval([t])
    res.append(g)
np.concatenate(blobs, axis=0).tofile(out)
print(json.dumps({"greedy": res, "n_vocab": llm.n_vocab()}))
"""


def convert(arch_dir, form, pre, out=None, outtype="bf16"):
    out = out or arch_dir / f"llamacpp-{form}.gguf"
    if out.exists():
        out.unlink()
    outtype = ["--outtype", outtype] if form == "float" else []
    r = subprocess.run([sys.executable, "-c", CONVERT, str(LLAMA), pre, str(arch_dir / form), "--outfile", str(out)]
                       + outtype, capture_output=True, text=True)
    if r.returncode != 0 or not out.exists():
        lines = [l for l in (r.stderr + r.stdout).splitlines() if l.strip()]
        return {"ok": False, "error": "\n".join(lines[-12:])}
    return {"ok": True, "file": out.name, "bytes": out.stat().st_size}


def describe(gguf_path):
    sys.path.insert(0, str(LLAMA / "gguf-py"))
    import gguf
    rd = gguf.GGUFReader(str(gguf_path))
    meta = {}
    for k, f in rd.fields.items():
        if k.startswith("tokenizer.ggml.") and k not in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
            meta[k] = f"<{len(f.data)} entries>" if f.types and f.types[0] == gguf.GGUFValueType.ARRAY else f.contents()
            continue
        if k.startswith("GGUF.") or k == "tokenizer.chat_template":
            continue
        meta[k] = f.contents()
    tensors = {}
    for t in rd.tensors:
        if t.name.startswith("blk.") and not t.name.startswith("blk.0."):
            continue
        entry = {"shape": [int(x) for x in t.shape], "type": t.tensor_type.name}
        if t.n_elements <= 16 and t.tensor_type.name in ("F32", "F16", "BF16"):
            entry["values"] = [float(x) for x in np.asarray(t.data, dtype=np.float32).reshape(-1)]
        tensors[t.name] = entry
    return {"metadata": meta, "tensors": tensors}


def run_greedy(gguf_path, prompts):
    with tempfile.TemporaryDirectory() as td:
        job = pathlib.Path(td) / "job.json"
        job.write_text(json.dumps({"prompts": prompts, "n": N_GREEDY}))
        blob = pathlib.Path(td) / "logits.f32"
        r = subprocess.run([str(PEER_PY), "-c", WORKER, str(gguf_path), str(job), str(blob)],
                           capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if r.returncode != 0:
            lines = [l for l in (r.stderr + r.stdout).splitlines() if l.strip()]
            return {"ok": False, "rc": r.returncode, "error": "\n".join(lines[-12:])}, None
        res = json.loads(r.stdout.strip().splitlines()[-1])
        return {"ok": True, "greedy": res["greedy"]}, np.fromfile(blob, dtype="<f4").reshape(-1, res["n_vocab"])


def main():
    for a in sys.argv[1:]:
        arch_dir = pathlib.Path(a)
        arch = arch_dir.name
        rec = json.loads((arch_dir / "logits.json").read_text())
        nv, sets = rec["n_vocab"], rec["sets"]
        ref = np.fromfile(arch_dir / rec["logits_file"], dtype="<f4")
        prompts = [p["ids"] for p in rec["prompts"]]
        desc, greedy = {"pre_tokenizer_answered": PRE[arch]}, {"n": N_GREEDY, "n_threads": 1, "prompts": prompts,
                                                               "transformers_float": [p["greedy"][:N_GREEDY] for p in rec["prompts"]]}
        td = tempfile.TemporaryDirectory()
        for form in [f for f in FORMS if (arch_dir / f).is_dir()] + ["float-f32"]:
            if form == "float-f32":  # not committed: llama.cpp's own arithmetic without bf16 activations
                c = convert(arch_dir, "float", PRE[arch], pathlib.Path(td.name) / "f32.gguf", "f32")
                path = pathlib.Path(td.name) / "f32.gguf"
            elif form in COMMITTED.get(arch, COMMITTED["*"]):
                c = convert(arch_dir, form, PRE[arch])
                path = arch_dir / c.get("file", "-")
            else:  # converted, described and run, not kept (size)
                path = pathlib.Path(td.name) / f"llamacpp-{form}.gguf"
                c = convert(arch_dir, form, PRE[arch], path)
                if c["ok"]:
                    c["file"] = f"(not committed) {path.name}"
            if form != "float-f32":
                desc[form] = {"convert": c}
            if not c["ok"] and form != "float-f32":
                desc[form]["convert"] = c
            if not c["ok"]:
                greedy[form] = {"ok": False, "error": "conversion failed: " + c["error"]}
                print(arch, form, "convert FAILED", c["error"][-300:], flush=True)
                continue
            if form != "float-f32":
                desc[form].update(describe(path))
            g, lg = run_greedy(path, prompts)
            if lg is not None:
                diffs = {}
                row = 0
                for p in rec["prompts"]:
                    n = len(p["ids"])
                    mine = lg[row:row + n]
                    row += n
                    for k, s in enumerate(sets):
                        o = p["offset"] + k * n * nv
                        r = ref[o:o + n * nv].reshape(n, nv)
                        diffs[s] = max(diffs.get(s, 0.0), float(np.abs(mine - r).max()))
                g["max_abs_logit_diff_vs"] = diffs
                g["agrees_with_transformers_float"] = [x == y for x, y in zip(g["greedy"], greedy["transformers_float"])]
            greedy[form] = g
            print(arch, form, json.dumps(g)[:400], flush=True)
        td.cleanup()
        (arch_dir / "llamacpp.json").write_text(json.dumps(desc, indent=1, default=str) + "\n")
        (arch_dir / "llamacpp_greedy.json").write_text(json.dumps(greedy, indent=1) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""llama.cpp's side of fixtures/hybrid/<arch> (qwen3_5, qwen3_5_moe, qwen3_next) and of
fixtures/nemotron_h/<arch> (nemotron_h_dense, nemotron3_moe, nemotron3_latent: float only), of
fixtures/gemma4, gemma4-e2b, gemma4-moe (GEMMA_VOCAB says what is answered) and of
fixtures/muse_glimmer, as
tools/moe_llamacpp.py does it for fixtures/moe (its describe() and greedy worker are reused):

1. llama.cpp's own convert_hf_to_gguf.py (the source tree of the PyPI llama-cpp-python peer,
   build-peer/llama-src/vendor/llama.cpp, with its gguf-py) converts float/ (--outtype bf16: exact)
   into <arch>/llamacpp-float.gguf (committed), float/ again with --outtype f32 (run only), and
   modelopt-nvfp4/ (its ModelOpt NVFP4 repack; committed as llamacpp-modelopt-nvfp4.gguf where it
   converts: only qwen3_5, the MoE experts' width 32 is no multiple of llama.cpp's 64). Every run
   passes --no-mtp for the Qwen archs (the fixtures have no MTP layers, and without it the converter
   asserts it found some; it refuses the flag for nemotron_h). For nemotron_h_dense the converter
   reads config.json as it is (config_json_answer() says why). Answered as in moe_llamacpp.py: the pre-tokenizer hash check (our trained tokenizer:
   "qwen2", the family whose Split pattern it uses); and for qwen3_5 / qwen3_5_moe the
   mrope_section the config lacks (mrope_answer() says why: llama.cpp's default crashes ggml on a
   model rotating 4 dimensions). Nothing else of the converter is touched.
   qwen3_5's float-vlm/ (the release layout: VLM wrapper, vision tower, one MTP layer) is
   converted as a release is, MTP layer included (llama.cpp appends it as blk.4, block_count 5,
   nextn_predict_layers 1; the vision tower goes to mmproj, not converted here):
   llamacpp-float-vlm.gguf.
2. Our `nvfp4 convert` (build/nvfp4) writes GGUFs of the same directories in llama.cpp's layout:
   float/ with --keep '*' --head f16 (bf16 kept as it is) and modelopt-nvfp4/ with --head f16
   (NVFP4 repacked, the bf16 head and embedding kept, as llama.cpp's conversion does),
   into a temporary directory; llama-cpp-python loads and runs them too ("ours-float",
   "ours-modelopt-nvfp4"), so the record says whether llama.cpp runs our files.
3. gguf-py's GGUFReader lists llama.cpp's files -> <arch>/llamacpp.json; llama-cpp-python
   (n_threads 1) runs the 3 prompts of logits.json greedily (8 tokens, our ids): its logits at the
   prompt positions against logits.f32 and its greedy tokens -> <arch>/llamacpp_greedy.json.
A step that fails records its exact error instead.

Run: build-peer/tools-venv/bin/python tools/hybrid_llamacpp.py fixtures/hybrid/qwen3_5 [...]
(tools-venv: torch, numpy, transformers, safetensors, sentencepiece, pyyaml, tqdm)
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import moe_llamacpp as M  # noqa: E402

ROOT = M.ROOT
NVFP4 = ROOT / "build" / "nvfp4"
PRE = "qwen2"
COMMITTED = ["float", "modelopt-nvfp4", "float-vlm"]


def mrope_answer(config):
    """The mrope_section answered for qwen3_5 / qwen3_5_moe whose config has none: llama.cpp's
    converter writes [11, 11, 10, 0] (the releases' 32 rotated pairs), and ggml's IMROPE asserts
    (GGML_ASSERT(sect_dims <= ne0), ggml-cpu/ops.cpp) on a model that rotates fewer dimensions, as
    these fixtures (4 of 16) do. The answer splits the model's own pairs 11:11:10, which for text
    positions (equal in every section) rotates exactly as without sections. None: nothing to answer."""
    if config.get("model_type") not in ("qwen3_5_text", "qwen3_5_moe_text", "qwen3_5", "qwen3_5_moe"):
        return None
    c = config.get("text_config", config)
    rope = c.get("rope_parameters", {})
    if "mrope_section" in rope:
        return None
    half = int(c["head_dim"] * rope.get("partial_rotary_factor", c.get("partial_rotary_factor", 1.0))) // 2
    return None if half >= 32 else [(half + 2) // 3, (half + 1) // 3, half // 3]


# The converter's own fallback when transformers does not know a config (it then reads config.json as
# it is): taken for a dense nemotron_h (config_json_answer), whose config transformers 5.17's
# NemotronHConfig fills with MoE defaults (num_experts_per_tok 2), from which NemotronHModel takes
# the model for nemotron_h_moe and writes its MLP layers as Mamba-2 layers (feed_forward_length 0).
# The dense releases (Nemotron Nano v2) ship their own config code, which AutoConfig without
# trust_remote_code refuses, so the converter reads them this way.
NO_AUTOCONFIG = """class _NoAutoConfig:
    @staticmethod
    def from_pretrained(*a, **k):
        raise ValueError("AutoConfig refused (answered: config.json as it is)")
base.AutoConfig = _NoAutoConfig
"""


# Gemma 4's set_vocab reads only Gemma's own tokenizer (a BPE with byte fallback: LlamaHfVocab);
# the fixtures' tokenizer is trained here (tools/arch_tokenizers.py, a byte-level BPE as Qwen's),
# so the vocabulary goes through the converter's generic gpt2 path. The tensors and the model's
# keys are the converter's own.
GEMMA_VOCAB = """import conversion.gemma as _gemma
_gemma.Gemma4Model.set_vocab = lambda self: base.TextModel._set_vocab_gpt2(self)
"""


def gemma_vocab_answer(config):
    return config.get("model_type") in ("gemma4", "gemma4_text")


def config_json_answer(config):
    return config.get("model_type") == "nemotron_h" and "num_experts_per_tok" not in config


def convert_llamacpp(arch_dir, form, out, outtype):
    if out.exists():
        out.unlink()
    extra = ["--outtype", outtype] if form.startswith("float") else []
    src = arch_dir / form
    config = json.loads((src / "config.json").read_text())
    # Qwen3.5's release layout keeps its MTP layer (llama.cpp's default); the converter refuses the
    # flag for other families (nemotron_h leaves its MTP tensors out by itself).
    if form != "float-vlm" and config.get("model_type", "").startswith("qwen3"):
        extra.append("--no-mtp")
    answer = mrope_answer(config)
    td = tempfile.TemporaryDirectory()
    if answer:  # a copy of the directory whose config.json carries the answer (tensors linked)
        cp = pathlib.Path(td.name) / form
        cp.mkdir()
        for f in src.iterdir():
            (cp / f.name).symlink_to(f)
        (cp / "config.json").unlink()
        config.get("text_config", config).setdefault("rope_parameters", {})["mrope_section"] = answer
        (cp / "config.json").write_text(json.dumps(config, indent=2))
        src = cp
    script = M.CONVERT
    if config_json_answer(config):
        script = script.replace("import conversion.base as base\n", "import conversion.base as base\n" + NO_AUTOCONFIG)
    if gemma_vocab_answer(config):
        script = script.replace("import convert_hf_to_gguf\n", "import convert_hf_to_gguf\n" + GEMMA_VOCAB)
    r = subprocess.run([sys.executable, "-c", script, str(M.LLAMA), PRE, str(src), "--outfile", str(out)] + extra,
                       capture_output=True, text=True)
    td.cleanup()
    if r.returncode != 0 or not out.exists():
        lines = [l for l in (r.stderr + r.stdout).splitlines() if l.strip()]
        return {"ok": False, "error": "\n".join(lines[-12:])}
    return {"ok": True, "file": out.name, "bytes": out.stat().st_size, **({"mrope_section_answered": answer} if answer else {}),
            **({"hparams_answered": "config.json as it is (AutoConfig refused)"} if config_json_answer(config) else {}),
            **({"vocab_answered": "gpt2 (byte BPE) vocabulary path"} if gemma_vocab_answer(config) else {})}


def convert_ours(arch_dir, form, out):
    args = [str(NVFP4), "convert", str(arch_dir / form), str(out), "--verify", "--head", "f16"]
    if form == "float":
        args += ["--keep", "*"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0 or not out.exists():
        return {"ok": False, "error": (r.stderr + r.stdout).strip()[-1500:]}
    return {"ok": True, "command": "nvfp4 convert " + " ".join(args[2:]).replace(str(ROOT) + "/", ""), "bytes": out.stat().st_size}


def compare(lg, rec, ref):
    nv, sets = rec["n_vocab"], rec["sets"]
    diffs, row = {}, 0
    for p in rec["prompts"]:
        n = len(p["ids"])
        mine = lg[row:row + n]
        row += n
        for k, s in enumerate(sets):
            o = p["offset"] + k * n * nv
            diffs[s] = max(diffs.get(s, 0.0), float(np.abs(mine - ref[o:o + n * nv].reshape(n, nv)).max()))
    return {s: (d if np.isfinite(d) else None) for s, d in diffs.items()}  # None: a set the fixture's producer did not make


def main():
    for a in sys.argv[1:]:
        arch_dir = pathlib.Path(a).resolve()
        rec = json.loads((arch_dir / "logits.json").read_text())
        ref = np.fromfile(arch_dir / rec["logits_file"], dtype="<f4")
        prompts = [p["ids"] for p in rec["prompts"]]
        desc = {"pre_tokenizer_answered": PRE,
                "converter_flags": "--no-mtp (float-vlm: without)" if arch_dir.name.startswith("qwen3") else "none"}
        greedy = {"n": M.N_GREEDY, "n_threads": 1, "prompts": prompts,
                  "transformers_float": [p["greedy"][:M.N_GREEDY] for p in rec["prompts"]]}
        td = tempfile.TemporaryDirectory()
        tmp = pathlib.Path(td.name)
        runs = []
        forms = [f for f in ["float", "modelopt-nvfp4"] if (arch_dir / f).is_dir()] + (["float-vlm"] if arch_dir.name == "qwen3_5" else [])
        for form in forms:
            out = arch_dir / f"llamacpp-{form}.gguf" if form in COMMITTED else tmp / f"llamacpp-{form}.gguf"
            c = convert_llamacpp(arch_dir, form, out, "bf16")
            desc[form] = {"convert": c}
            if c["ok"]:
                desc[form].update(M.describe(out))
            runs.append((form, c, out))
        c = convert_llamacpp(arch_dir, "float", tmp / "f32.gguf", "f32")
        runs.append(("float-f32", c, tmp / "f32.gguf"))
        for form in [f for f in ["float", "modelopt-nvfp4"] if (arch_dir / f).is_dir()]:
            out = tmp / f"ours-{form}.gguf"
            c = convert_ours(arch_dir, form, out)
            desc["ours-" + form] = {"convert": c}
            runs.append(("ours-" + form, c, out))
        for form, c, path in runs:
            if not c["ok"]:
                greedy[form] = {"ok": False, "error": "conversion failed: " + c["error"]}
                print(arch_dir.name, form, "convert FAILED", c["error"][-400:], flush=True)
                if not path.name.startswith(("f32", "ours")) and path.exists():
                    path.unlink()
                continue
            g, lg = M.run_greedy(path, prompts)
            if lg is not None:
                g["max_abs_logit_diff_vs"] = compare(lg, rec, ref)
                g["agrees_with_transformers_float"] = [x == y for x, y in zip(g["greedy"], greedy["transformers_float"])]
            greedy[form] = g
            print(arch_dir.name, form, json.dumps(g)[:400], flush=True)
        td.cleanup()
        (arch_dir / "llamacpp.json").write_text(json.dumps(desc, indent=1, default=str) + "\n")
        (arch_dir / "llamacpp_greedy.json").write_text(json.dumps(greedy, indent=1) + "\n")


if __name__ == "__main__":
    main()

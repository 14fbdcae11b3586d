#!/usr/bin/env python3
"""Trains a one-block MTP head (Qwen3.5's MTP form, Llama block: tools/mtp_smollm2.py) for the bundled
SmolLM2-135M-Instruct by distillation on the CPU, measures its greedy acceptance, and writes:

  fixtures/mtp/smollm2_mtp.gguf      the head as a llama.cpp nextn side file (blk.30.*, F16 matrices,
                                     F32 norms, q/k permuted as convert_hf_to_gguf.py does)
  fixtures/mtp/acceptance.json       the acceptance figures (teacher forced, chained, free-running)
  fixtures/mtp/reference.json + ref_p{0,1}_*.npy   the engine's reference (see fixtures/mtp/README.md)
  models/mtp/smollm2_mtp.safetensors the same weights under HF names (mtp.*), not committed

Trunk: the bundled Q4_1 GGUF loaded by transformers' GGUF loader in float32 (as tools/gen_smollm2_hf.py).
Text: Debian's license texts and Python 3.11's standard library (held-out files below for evaluation),
plus the trunk's own greedy answers to chat prompts built from the training texts (self-distillation).
Teacher (computed once, cached under models/mtp/cache.pt): the trunk's final-normed hidden states and
its top-K next-token logits. Loss: cross-entropy of the MTP's softmax, restricted to the batch's
teacher top-K ids plus random vocabulary rows (the tied head's rows gathered), against the teacher's
top-K distribution at position t+1, plus half the cross-entropy of the teacher's argmax.

--teacher engine (tools/mtp_engine_teacher.py; the committed head): `nvfp4 serve` (build/nvfp4) is the
teacher instead: its own greedy answers to --engine-answers generated chat prompts, and every token's
hidden state as the engine computes it (/v1/embeddings, "pooling": "none"); fixtures/mtp/README.md.

Run (about 20 minutes at one thread):
  nice -n 19 /work/wt/mixed-precision/.pyvenv/bin/python tools/train_mtp_smollm2.py
  --from-gguf fixtures/mtp/smollm2_mtp.gguf: no training; re-read the side file, re-measure, rewrite
  the safetensors and the reference.
"""
import argparse
import json
import math
import os
import pathlib
import random
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import mtp_smollm2 as M  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
LICENSES = pathlib.Path("/usr/share/common-licenses")
PYLIB = pathlib.Path("/usr/lib/python3.11")
HELD_LICENSES = ["Apache-2.0", "Artistic"]
HELD_PY = ["textwrap.py", "fractions.py", "heapq.py"]
L = 256          # window length in tokens
K = 32           # teacher top-k kept
PROMPTS = ["The capital of France is",  # the same two prompts as fixtures/arch/smollm2_logits.json
           "<|im_start|>user\nWhat is 12 * 7?<|im_end|>\n<|im_start|>assistant\n"]
CHAT_EVAL = ["Write a short poem about the sea.",
             "Explain what a Python list comprehension is, with an example.",
             "What are three good habits for staying healthy?",
             "Describe how a bicycle works.",
             "Give me a recipe for a simple tomato soup.",
             "What is the difference between a compiler and an interpreter?"]
T0 = time.process_time()


def log(*a):
    print(f"[{time.process_time() - T0:7.1f}s cpu]", *a, flush=True)


def trunk_gguf():
    return os.environ.get("NVFP4_SMOLLM2_GGUF") or subprocess.check_output(
        ["bash", str(ROOT / "scripts" / "model-path.sh")], text=True).strip()


def check_permute(trunk, cfg):
    """Our q/k permutation applied to the trunk's last layer (transformers un-permuted it at load)
    gives back the trunk GGUF's own blk.29.attn_q/attn_k (dequantized): the side file's q/k rows are
    in the order the engine already reads for the trunk."""
    import gguf
    r = gguf.GGUFReader(trunk_gguf())
    lay = trunk.model.layers[-1].self_attn
    n = len(trunk.model.layers) - 1
    for t in r.tensors:
        if t.name in (f"blk.{n}.attn_q.weight", f"blk.{n}.attn_k.weight"):
            deq = gguf.dequantize(t.data, t.tensor_type).reshape(
                [int(x) for x in reversed(t.shape.tolist())])
            w = (lay.q_proj if "attn_q" in t.name else lay.k_proj).weight.detach().numpy()
            mine = M.permute(w, cfg.num_attention_heads, None if "attn_q" in t.name else cfg.num_key_value_heads)
            assert np.array_equal(mine, deq), f"{t.name}: permute disagrees with the trunk GGUF"
    log(f"q/k permutation == the trunk GGUF's blk.{n}.attn_q/attn_k")


def load_trunk():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
    d, n = os.path.split(trunk_gguf())
    trunk = AutoModelForCausalLM.from_pretrained(d, gguf_file=n, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(d, gguf_file=n)
    for p in trunk.parameters():
        p.requires_grad_(False)
    return trunk, tok


def chat_ids(tok, text):
    return tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                   tokenize=True, return_dict=True)["input_ids"]


def generate(trunk, tok, prompt_ids, n):
    with torch.no_grad():
        g = trunk.generate(torch.tensor([prompt_ids]), max_new_tokens=n, do_sample=False,
                           eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"), pad_token_id=2)
    return g[0].tolist()


def windows_of(ids, cap=None):
    out = [ids[i:i + L] for i in range(0, len(ids), L) if len(ids) - i >= 64]
    return out[:cap] if cap else out


def chat_train_prompts(rng, lic_texts, py_texts, n):
    out = []
    for i in range(n):
        if i % 2 == 0:
            name, text = py_texts[rng.randrange(len(py_texts))]
            lines = text.splitlines()
            s = rng.randrange(max(1, len(lines) - 16))
            snippet = "\n".join(lines[s:s + 16])
            ask = rng.choice(["Explain what this Python code does:", "Summarize this code from " + name + ":",
                              "What could go wrong in this code?"])
            out.append(f"{ask}\n```python\n{snippet}\n```")
        else:
            name, text = lic_texts[rng.randrange(len(lic_texts))]
            paras = [p for p in text.split("\n\n") if len(p) > 200]
            para = paras[rng.randrange(len(paras))][:900]
            ask = rng.choice(["Explain this license clause in plain words:", "Summarize this text:",
                              "What does this paragraph from the " + name + " license mean?"])
            out.append(f"{ask}\n\n{para}")
    return out


def build_data(trunk, tok, a):
    rng = random.Random(0)
    lic = [(p.name, p.read_text()) for p in sorted(LICENSES.iterdir()) if not p.is_symlink()]
    py = [(p.name, p.read_text()) for p in sorted(PYLIB.glob("*.py"))]
    lic_tr = [x for x in lic if x[0] not in HELD_LICENSES]
    py_tr = [x for x in py if x[0] not in HELD_PY]
    train, evals, chat = [], [], []
    lw = [w for _, t in lic_tr for w in windows_of(tok.encode(t))]
    train += rng.sample(lw, min(a.license_windows, len(lw)))
    for name, t in rng.sample(py_tr, a.python_windows):
        ids = tok.encode(t)
        s = rng.randrange(max(1, len(ids) - L))
        train.append(ids[s:s + L])
    log(f"text windows: {len(train)} ({sum(map(len, train))} tokens)")
    if a.teacher == "engine":
        import mtp_engine_teacher as E
        for name, t in [x for x in lic if x[0] in HELD_LICENSES] + [x for x in py if x[0] in HELD_PY]:
            evals += windows_of(tok.encode(t), cap=a.eval_cap)
        return E.build_data(a.nvfp4, trunk_gguf(), tok, trunk.model.embed_tokens.weight.detach(), a, L, K, log,
                            chat_ids, CHAT_EVAL, train, evals, chat_train_prompts(rng, lic_tr, py_tr, a.chat_windows),
                            str(pathlib.Path(a.work) / "engine.log"))
    for i, p in enumerate(chat_train_prompts(rng, lic_tr, py_tr, a.chat_windows)):
        ids = chat_ids(tok, p)[: L - a.chat_new]
        train.append(generate(trunk, tok, ids, a.chat_new)[:L])
        if i % 8 == 7:
            log(f"self-distillation answers: {i + 1}/{a.chat_windows}")
    for name, t in [x for x in lic if x[0] in HELD_LICENSES] + [x for x in py if x[0] in HELD_PY]:
        evals += windows_of(tok.encode(t), cap=a.eval_cap)
    for p in CHAT_EVAL:
        ids = chat_ids(tok, p)
        g = generate(trunk, tok, ids, a.chat_new)
        chat.append((g, len(ids)))
    log(f"train {len(train)} windows ({sum(map(len, train))} tokens), eval {len(evals)} windows "
        f"({sum(map(len, evals))} tokens), chat eval {len(chat)} generations "
        f"({sum(len(g) - p for g, p in chat)} generated tokens)")
    return {"train": teacher(trunk, train), "eval": teacher(trunk, evals),
            "chat": teacher(trunk, [g for g, _ in chat]), "chat_start": [p - 1 for _, p in chat]}


def teacher(trunk, seqs):
    n = len(seqs)
    ids = torch.full((n, L), 2, dtype=torch.long)
    valid = torch.tensor([len(s) for s in seqs])
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
    hid = torch.empty(n, L, trunk.config.hidden_size)
    tv = torch.empty(n, L, K)
    ti = torch.empty(n, L, K, dtype=torch.int32)
    with torch.no_grad():
        for b in range(0, n, 4):
            h = trunk.model(input_ids=ids[b:b + 4]).last_hidden_state
            v, i = torch.topk(trunk.lm_head(h), K, -1)
            hid[b:b + 4], tv[b:b + 4], ti[b:b + 4] = h, v, i.int()
    log(f"teacher: {n} windows")
    return {"ids": ids, "valid": valid, "hid": hid, "tv": tv, "ti": ti}


def step1_inputs(d, idx, emb):
    """MTP rows t = 0..L-2 of windows idx: h_t and embed(x_{t+1})."""
    h = d["hid"][idx, :-1]
    e = emb[d["ids"][idx, 1:]]
    pos = torch.arange(L - 1)[None].expand(len(idx), -1)
    return h, e, pos


def train(mtp, d, emb, a, watch=None):
    params = [p for p in mtp.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=a.lr, betas=(0.9, 0.98), weight_decay=0.0)
    g = torch.Generator().manual_seed(0)
    n = len(d["ids"])
    n_chat = int(d["n_chat_train"][0]) if "n_chat_train" in d else a.chat_windows
    pool = list(range(n)) + list(range(n - n_chat, n)) * (a.chat_repeat - 1)  # answers last
    mask = M.causal_mask(L - 1)
    order = []
    t_start = time.process_time()
    for step in range(a.steps):
        if len(order) < a.batch:
            order += [pool[j] for j in torch.randperm(len(pool), generator=g).tolist()]
        idx = torch.tensor(order[:a.batch])
        order = order[a.batch:]
        lr = a.lr * min(1.0, (step + 1) / 20) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / a.steps)))
        for grp in opt.param_groups:
            grp["lr"] = lr
        h, e, pos = step1_inputs(d, idx, emb)
        out = mtp(h, e, pos, mask)                                   # [B, T, D]
        ti = d["ti"][idx, 1:].long()                                 # teacher at t+1: [B, T, K]
        tv = d["tv"][idx, 1:]
        rows = torch.arange(L - 1)[None]
        keep = rows < (d["valid"][idx, None] - 1)                   # t <= valid-2
        cand = torch.unique(torch.cat([ti[keep].flatten(),
                                       torch.randint(0, emb.shape[0], (a.negatives,), generator=g)]))
        inv = torch.full((emb.shape[0],), -1, dtype=torch.long)
        inv[cand] = torch.arange(len(cand))
        logq = torch.log_softmax(out @ emb[cand].T, -1)             # [B, T, C]
        lq = logq.gather(-1, inv[ti].clamp(min=0))                              # [B, T, K]
        p = torch.softmax(tv, -1)
        soft = -(p * lq).sum(-1)
        hard = -lq[..., 0]
        loss = ((soft + a.hard * hard) * keep).sum() / keep.sum()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step % 10 == 0 or step == a.steps - 1:
            with torch.no_grad():
                acc = (logq.argmax(-1) == inv[ti[..., 0]])[keep].float().mean().item()
            el = time.process_time() - t_start
            log(f"step {step}/{a.steps} loss {loss.item():.4f} soft {soft[keep].mean().item():.4f} "
                f"batch acc {acc:.3f} lr {lr:.2e} | {el / (step + 1):.2f}s/step, "
                f"eta {el / (step + 1) * (a.steps - step - 1) / 60:.1f} min")
        if watch is not None and a.watch_every and (step + 1) % a.watch_every == 0:
            log(f"step {step + 1}: held-out step-1 acceptance (first 8 windows, watched, not used) "
                f"{evaluate(mtp, watch, emb)['step1']:.3f}")


def check_chained_mask(mtp, d, emb, t=37):
    """Step 2's row for position t through chained_mask == a plain causal pass over step-1 rows 0..t
    followed by the step-2 row (what an engine with the MTP's KV cache computes)."""
    T = L - 1
    with torch.no_grad():
        h, e, pos = step1_inputs(d, torch.tensor([0]), emb)
        g1 = mtp(h, e, pos, M.causal_mask(T))
        d1 = (g1 @ emb.T).argmax(-1)
        g2 = mtp(torch.cat([h, g1], 1), torch.cat([e, emb[d1]], 1), torch.cat([pos, pos + 1], 1),
                 M.chained_mask(T))[0, T + t]
        hh = torch.cat([h[:, :t + 1], g1[:, t:t + 1]], 1)
        ee = torch.cat([e[:, :t + 1], emb[d1[:, t:t + 1]]], 1)
        pp = torch.cat([pos[:, :t + 1], pos[:, t:t + 1] + 1], 1)
        g2b = mtp(hh, ee, pp, M.causal_mask(t + 2))[0, -1]
    err = (g2 - g2b).abs().max().item()
    assert err < 1e-4, f"chained mask differs from the incremental pass by {err}"
    log(f"chained mask == incremental pass (max abs diff {err:.2e})")


def evaluate(mtp, d, emb, starts=None):
    """Greedy acceptance with teacher forcing. Step 1: argmax MTP(h_t, x_{t+1}) == trunk argmax at t+1.
    Step 2 (chained): argmax MTP(g_t, d1_t) at position t+1, seeing step-1 rows 0..t, == trunk argmax at
    t+2 (d1_t: step 1's argmax, g_t: step 1's output hidden). starts[i]: first t counted in window i."""
    n1 = a1 = n2 = a2 = both = 0
    T = L - 1
    mask2 = M.chained_mask(T)
    with torch.no_grad():
        for i in range(len(d["ids"])):
            idx = torch.tensor([i])
            h, e, pos = step1_inputs(d, idx, emb)
            g1 = mtp(h, e, pos, M.causal_mask(T))
            d1 = (g1 @ emb.T).argmax(-1)                             # [1, T]
            hh = torch.cat([h, g1], 1)
            ee = torch.cat([e, emb[d1]], 1)
            pp = torch.cat([pos, pos + 1], 1)
            g2 = mtp(hh, ee, pp, mask2)[:, T:]
            d2 = (g2 @ emb.T).argmax(-1)
            tgt = d["ti"][i, :, 0].long()                            # trunk argmax at each position
            if "own_tokens" in d:  # the engine's own greedy answers: the next token is its pick
                tgt = torch.cat([d["ids"][i, 1:], d["ids"][i, -1:]])
            v = int(d["valid"][i])
            s = 0 if starts is None else starts[i]
            t1 = torch.arange(s, v - 1)
            ok1 = d1[0, t1] == tgt[t1 + 1]
            n1 += len(t1)
            a1 += int(ok1.sum())
            t2 = torch.arange(s, v - 2)
            ok2 = d2[0, t2] == tgt[t2 + 2]
            n2 += len(t2)
            a2 += int(ok2.sum())
            both += int((ok2 & ok1[: len(t2)]).sum())
    return {"step1": a1 / n1, "step2": a2 / n2, "step1_and_2": both / n2,
            "step2_given_step1": both / max(1, a1), "positions": n1}


def reference(trunk, tok, mtp, out_dir):
    emb = trunk.model.embed_tokens.weight
    ref = {"prompts": PROMPTS, "rows": 8, "note": "see README.md"}
    with torch.no_grad():
        for k, p in enumerate(PROMPTS):
            ids = tok.encode(p)
            h = trunk.model(input_ids=torch.tensor([ids])).last_hidden_state
            T = len(ids) - 1
            e = emb[torch.tensor([ids[1:]])]
            pos = torch.arange(T)[None]
            g1 = mtp(h[:, :-1], e, pos, M.causal_mask(T))
            lg1 = g1 @ emb.T
            d1 = lg1.argmax(-1)
            g2 = mtp(torch.cat([h[:, :-1], g1], 1), torch.cat([e, emb[d1]], 1), torch.cat([pos, pos + 1], 1),
                     M.chained_mask(T))[:, T:]
            lg2 = g2 @ emb.T
            r = min(8, T)
            np.save(out_dir / f"ref_p{k}_hidden.npy", h[0, :r].numpy().astype(np.float32))
            np.save(out_dir / f"ref_p{k}_mtp_logits.npy", lg1[0, :r].numpy().astype(np.float32))
            np.save(out_dir / f"ref_p{k}_mtp_hidden.npy", g1[0, :r].numpy().astype(np.float32))
            top1 = torch.topk(lg1[0, :r], 16, -1)
            top2 = torch.topk(lg2[0, :r], 16, -1)
            ref[f"p{k}"] = {
                "ids": ids, "mtp_rows": r,
                "step1_argmax": d1[0, :r].tolist(),
                "step1_logsumexp": [float(f"{x:.8g}") for x in torch.logsumexp(lg1[0, :r].double(), -1).tolist()],
                "step1_top16_ids": top1.indices.tolist(),
                "step2_argmax": lg2[0, :r].argmax(-1).tolist(),
                "step2_logsumexp": [float(f"{x:.8g}") for x in torch.logsumexp(lg2[0, :r].double(), -1).tolist()],
                "step2_top16_ids": top2.indices.tolist(),
                "step2_top16_logits": [[float(f"{x:.8g}") for x in row] for row in top2.values.tolist()],
            }
    (out_dir / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")


def write_safetensors(mtp, path):
    from safetensors.torch import save_file
    path.parent.mkdir(parents=True, exist_ok=True)
    st = {k: (v.half() if v.dim() == 2 else v.float()) for k, v in M.hf_state(mtp).items()}
    save_file(st, str(path), metadata={"format": "pt", "source": "tools/train_mtp_smollm2.py"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "mtp"))
    ap.add_argument("--work", default=str(ROOT / "models" / "mtp"))
    ap.add_argument("--from-gguf", default=None)
    ap.add_argument("--license-windows", type=int, default=96)
    ap.add_argument("--python-windows", type=int, default=96)
    ap.add_argument("--chat-windows", type=int, default=24)
    ap.add_argument("--chat-new", type=int, default=128)
    ap.add_argument("--eval-cap", type=int, default=6)
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--chat-repeat", type=int, default=1, help="self-distillation answers seen this many times per epoch")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--hard", type=float, default=0.5)
    ap.add_argument("--negatives", type=int, default=2048)
    ap.add_argument("--watch-every", type=int, default=50)
    ap.add_argument("--teacher", choices=["torch", "engine"], default="torch",
                    help="engine: the answers and hidden states from `nvfp4 serve` (the trunk --spec mtp sees)")
    ap.add_argument("--engine-answers", type=int, default=1600, help="engine teacher: general chat prompts answered")
    ap.add_argument("--engine-sampled", type=int, default=0,
                    help="engine teacher: more chat prompts answered by sampling (temperature 0.8)")
    ap.add_argument("--nvfp4", default=str(ROOT / "build" / "nvfp4"))
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    out_dir, work = pathlib.Path(a.out), pathlib.Path(a.work)
    out_dir.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    trunk, tok = load_trunk()
    log("trunk loaded")
    cfg = M.mtp_config(trunk.config)
    check_permute(trunk, cfg)
    emb = trunk.model.embed_tokens.weight.detach()
    key = json.dumps({k: getattr(a, k) for k in ("license_windows", "python_windows", "chat_windows",
                                                  "chat_new", "eval_cap", "teacher", "engine_answers", "engine_sampled")},
                     sort_keys=True)
    cache = work / "cache.pt"
    d = torch.load(cache) if cache.exists() else None
    if d is None or d.get("key") != key:
        d = build_data(trunk, tok, a)
        d["key"] = key
        torch.save(d, cache)
    else:
        log(f"teacher data from {cache}")
    gguf_path = pathlib.Path(a.from_gguf) if a.from_gguf else out_dir / "smollm2_mtp.gguf"
    report = {}
    if not a.from_gguf:
        torch.manual_seed(0)
        mtp = M.MTP(cfg)
        mtp.init_from_trunk(trunk)
        for p in mtp.rotary.parameters():
            p.requires_grad_(False)
        mtp.eval()  # no dropout anywhere; eval() only fixes the mode
        report["init_eval"] = evaluate(mtp, d["eval"], emb)
        log("at init, held-out text:", report["init_eval"])
        t = time.process_time()
        train(mtp, d["train"], emb, a, {k: v[:8] for k, v in d["eval"].items()})
        report["train_cpu_s"] = round(time.process_time() - t, 1)
        M.round_matrices_f16(mtp)
        M.write_gguf(gguf_path, mtp, cfg)
        log(f"wrote {gguf_path} ({gguf_path.stat().st_size} bytes)")
    back = M.read_gguf(gguf_path, cfg)
    if not a.from_gguf:
        for (k, v), (k2, v2) in zip(mtp.state_dict().items(), back.state_dict().items()):
            assert k == k2 and torch.equal(v, v2), f"GGUF round trip differs at {k}"
        log("GGUF round trip: every tensor equal")
    mtp = back
    check_chained_mask(mtp, d["eval"], emb)
    report["heldout_text"] = evaluate(mtp, d["eval"], emb)
    log("held-out text:", report["heldout_text"])
    report["train_text"] = evaluate(mtp, {k: v[:16] for k, v in d["train"].items()}, emb)
    log("train text (16 windows):", report["train_text"])
    report["chat_free_running"] = evaluate(mtp, d["chat"], emb, d["chat_start"])
    log("chat, free-running greedy:", report["chat_free_running"])
    report["settings"] = {k: v for k, v in vars(a).items() if k not in ("out", "work", "from_gguf")}
    report["settings"].update({"window": L, "teacher_topk": K, "held_out": HELD_LICENSES + HELD_PY,
                               "chat_eval_prompts": CHAT_EVAL})
    report["total_cpu_s"] = round(time.process_time() - T0, 1)
    if not a.from_gguf:
        (out_dir / "acceptance.json").write_text(json.dumps(report, indent=1) + "\n")
    reference(trunk, tok, mtp, out_dir)
    write_safetensors(mtp, work / "smollm2_mtp.safetensors")
    log(f"wrote {out_dir}/reference.json, ref_p*.npy and {work}/smollm2_mtp.safetensors"
        + ("" if a.from_gguf else f", {out_dir}/acceptance.json"))


if __name__ == "__main__":
    main()

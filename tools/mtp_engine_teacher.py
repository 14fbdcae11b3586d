"""The engine as the MTP head's teacher (tools/train_mtp_smollm2.py --teacher engine).

`nvfp4 serve` runs the trunk exactly as `--spec mtp` will see it (quantized to NVFP4 at load, a16q8):
  - its greedy answers to many chat prompts (/v1/completions on the chat template's token ids,
    "return_tokens": true; 16 slots side by side), the text the head must predict at run time;
  - every token's final-normed hidden state (/v1/embeddings, "pooling": "none"): h_t, the head's
    input, the same bits the engine hands the MTP module;
  - the teacher's top-K next-token logits, h_{t} @ embed^T (the tied head) here in float32.
Prompts: templates over a topic list (none of the held-out chat prompts' topics), plus the
code/license questions of the torch teacher.
"""
import base64
import concurrent.futures
import json
import pathlib
import random
import re
import subprocess
import time
import urllib.request

import numpy as np
import torch

TEMPLATES = [
    "Tell me about {}.", "Explain how {} works.", "Write a short story about {}.", "What is {}?",
    "Give me three interesting facts about {}.", "Write a haiku about {}.", "Why is {} important?",
    "Describe {} to a child.", "What are the pros and cons of {}?", "Write a paragraph about the history of {}.",
    "How can I learn more about {}?", "Summarize what you know about {} in a few sentences.",
    "Write a short email to a friend about {}.", "List five questions a student might ask about {}.",
    "What is a common misconception about {}?", "Compare {} and {}.",
    "Write a limerick about {}.", "What would happen if there were no {}?", "Teach me the basics of {}.",
    "Write a short dialogue between two people discussing {}.", "What are the main parts of {}?",
    "Give me a step-by-step guide related to {}.", "How has {} changed over the last hundred years?",
    "Write a product description inspired by {}.", "What questions should I ask an expert on {}?",
]
TOPICS = [
    "the moon", "volcanoes", "bread baking", "chess", "rainforests", "electric cars", "the French Revolution",
    "honeybees", "photosynthesis", "jazz music", "the internet", "glaciers", "origami", "sleep", "coffee",
    "the pyramids of Egypt", "black holes", "recycling", "the human heart", "vaccines", "democracy", "bridges",
    "earthquakes", "the printing press", "solar panels", "dinosaurs", "the Roman Empire", "tea", "gardening",
    "machine learning", "the stock market", "climate change", "octopuses", "the violin", "mountains",
    "deserts", "friendship", "time management", "public speaking", "the immune system", "rainbows",
    "airplanes", "trains", "the Olympic Games", "Shakespeare", "mathematics", "prime numbers", "the atom",
    "electricity", "magnets", "the water cycle", "coral reefs", "whales", "wolves", "cats", "dogs", "horses",
    "the Renaissance", "ancient Greece", "the Silk Road", "the Great Wall of China", "libraries", "museums",
    "podcasts", "video games", "board games", "football", "tennis", "running", "yoga", "meditation",
    "chocolate", "cheese", "pizza", "rice", "spices", "vegetarian food", "budgeting", "saving money",
    "interest rates", "inflation", "taxes", "cryptography", "passwords", "databases", "operating systems",
    "the Linux kernel", "web browsers", "email", "smartphones", "batteries", "wind turbines", "nuclear power",
    "rivers", "oceans", "tides", "the solar system", "Mars", "Jupiter", "comets", "telescopes", "microscopes",
    "bacteria", "fungi", "trees", "flowers", "bees and pollination", "birds migrating", "penguins",
    "the Arctic", "Antarctica", "islands", "cities", "villages", "architecture", "painting", "sculpture",
    "photography", "cinema", "poetry", "novels", "fairy tales", "myths", "languages", "learning a language",
    "writing an essay", "job interviews", "teamwork", "leadership", "kindness", "happiness", "stress",
    "exercise", "nutrition", "water", "salt", "sugar", "paper", "glass", "steel", "plastic", "cotton",
    "wool", "the wheel", "clocks", "calendars", "maps", "compasses", "sailing", "submarines", "rockets",
    "satellites", "GPS", "weather forecasts", "thunderstorms", "snow", "hurricanes", "autumn", "spring",
    "birthdays", "holidays", "travel", "camping", "hiking", "fishing", "cooking pasta", "making pancakes",
    "sorting algorithms", "recursion", "binary numbers", "HTTP", "unit testing", "version control",
    "object-oriented programming", "functional programming", "regular expressions", "JSON", "spreadsheets",
]
HELD_TOPICS = ["sea", "list comprehension", "healthy", "bicycle", "tomato soup", "compiler"]


def chat_prompts(rng, n):
    topics = [t for t in TOPICS if not any(h in t for h in HELD_TOPICS)]
    out = []
    for _ in range(n):
        tpl = rng.choice(TEMPLATES)
        out.append(tpl.format(*rng.sample(topics, tpl.count("{}"))))
    return out


class Engine:
    """`nvfp4 serve` on the trunk, its log in a file."""

    def __init__(self, binary, model, log_path, parallel=16, threads=2, ctx=1024):
        self.log = open(log_path, "w")
        self.p = subprocess.Popen([binary, "serve", "-m", model, "--quantize", "--port", "0", "--ctx", str(ctx),
                                   "--parallel", str(parallel), "-t", str(threads), "--queue", "4096"],
                                  stderr=self.log, stdout=self.log)
        t0 = time.time()
        self.port = None
        while time.time() - t0 < 300:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", pathlib.Path(log_path).read_text())
            if m:
                self.port = int(m.group(1))
                try:
                    if urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health").status == 200:
                        return
                except Exception:
                    pass
            if self.p.poll() is not None:
                raise SystemExit(f"nvfp4 serve exited: see {log_path}")
            time.sleep(0.3)
        raise SystemExit(f"nvfp4 serve not ready: see {log_path}")

    def post(self, path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(req, timeout=600).read())

    def answer(self, prompt_ids, n, temperature=0.0, seed=0):
        r = self.post("/v1/completions", {"prompt": prompt_ids, "max_tokens": n, "temperature": temperature,
                                          "seed": seed, "return_tokens": True})
        return list(prompt_ids) + r["choices"][0]["tokens"]

    def hidden(self, ids):
        r = self.post("/v1/embeddings", {"input": ids, "pooling": "none", "encoding_format": "base64"})
        v = np.frombuffer(base64.b64decode(r["data"][0]["embedding"]), dtype="<f4")
        return v.reshape(len(ids), -1)

    def close(self):
        self.p.terminate()
        self.p.wait(timeout=60)
        self.log.close()


def answers(eng, prompt_id_lists, n_new, log, workers=16, temperature=0.0):
    """Greedy answers, or sampled at `temperature` with seed i for prompt i."""
    out = [None] * len(prompt_id_lists)
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        futs = {ex.submit(eng.answer, p, n_new, temperature, i): i for i, p in enumerate(prompt_id_lists)}
        for k, f in enumerate(concurrent.futures.as_completed(futs)):
            out[futs[f]] = f.result()
            if (k + 1) % 200 == 0:
                log(f"engine answers: {k + 1}/{len(out)}")
    return out


def teacher(eng, seqs, emb, L, K, log, workers=4):
    """The torch teacher's tensors (train_mtp_smollm2.teacher), with h from the engine."""
    n = len(seqs)
    ids = torch.full((n, L), 2, dtype=torch.long)
    valid = torch.tensor([len(s) for s in seqs])
    hid = torch.zeros(n, L, emb.shape[1])
    tv = torch.zeros(n, L, K)
    ti = torch.zeros(n, L, K, dtype=torch.int32)
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        rows = list(ex.map(eng.hidden, seqs))
    for i, (s, h) in enumerate(zip(seqs, rows)):
        ids[i, :len(s)] = torch.tensor(s)
        hid[i, :len(s)] = torch.from_numpy(h.copy())
    with torch.no_grad():
        for b in range(0, n, 16):
            v, j = torch.topk(hid[b:b + 16] @ emb.T, K, -1)
            tv[b:b + 16], ti[b:b + 16] = v, j.int()
    log(f"engine teacher: {n} windows")
    return {"ids": ids, "valid": valid, "hid": hid, "tv": tv, "ti": ti}


def build_data(binary, model, tok, emb, a, L, K, log, chat_ids, chat_eval, text_windows, evals, code_prompts,
               log_path):
    rng = random.Random(1)
    eng = Engine(binary, model, log_path)
    try:
        prompts = chat_prompts(rng, a.engine_answers) + code_prompts
        pid = [chat_ids(tok, p)[: L - a.chat_new] for p in prompts]
        log(f"engine answers: {len(pid)} prompts ({a.engine_answers} general, {len(code_prompts)} code/license)")
        gen = [g[:L] for g in answers(eng, pid, a.chat_new, log)]
        if a.engine_sampled:
            # Sampled answers (temperature 0.8) to more prompts: states the greedy text rarely
            # reaches; the targets are still the trunk's own next-token logits at each state.
            sp = [chat_ids(tok, p)[: L - a.chat_new] for p in chat_prompts(random.Random(2), a.engine_sampled)]
            log(f"engine answers: {len(sp)} more prompts, sampled at temperature 0.8")
            gen += [g[:L] for g in answers(eng, sp, a.chat_new, log, temperature=0.8)]
        ev_ids = [chat_ids(tok, p) for p in chat_eval]
        ev = answers(eng, ev_ids, a.chat_new, log)
        log(f"engine answers: {sum(len(g) - len(p) for g, p in zip(gen, pid))} generated tokens")
        d = {"train": teacher(eng, text_windows + gen, emb, L, K, log),
             "eval": teacher(eng, evals, emb, L, K, log),
             "chat": teacher(eng, ev, emb, L, K, log),
             "chat_start": [len(p) - 1 for p in ev_ids]}
        d["train"]["n_chat_train"] = torch.tensor([len(gen)])  # the answers come last
        d["chat"]["own_tokens"] = torch.tensor([1])  # acceptance against the engine's own greedy tokens
    finally:
        eng.close()
    return d

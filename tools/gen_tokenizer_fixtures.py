#!/usr/bin/env python3
"""Writes fixtures/tokenizers/<name>/: a tokenizer.json (re-serialized compactly; same content),
its tokenizer_config.json when there is one, and ids.json: for every text of
fixtures/tokenizers/texts.json the ids HF `tokenizers` gives (add_special_tokens=False), its decode
(skip_special_tokens=False) and, when the post-processor adds tokens, the ids with
add_special_tokens=True. tests/test_tokenizer_hf.cpp compares our tokenizer with these for every
fixture directory.

Run: /path/to/python tools/gen_tokenizer_fixtures.py [--out DIR] NAME=PATH ... [--train]
  PATH: a tokenizer.json or a directory holding one (and maybe tokenizer_config.json)
  --train: also train two tiny tokenizers with `tokenizers` itself (vocab ~1000): byte-level BPE
           with NFC, Qwen2's Split regex, ignore_merges and added tokens using lstrip / rstrip /
           single_word / normalized ("tiny-bytelevel"), and SentencePiece-style BPE with
           byte_fallback, fuse_unk and a Metaspace(prepend_scheme="first") ("tiny-spm")
  (needs: pip install tokenizers)
"""
import argparse
import json
import pathlib

import tokenizers
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEXTS = ROOT / "fixtures" / "tokenizers" / "texts.json"
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def corpus(texts):
    # The fixture texts and a little more prose, repeated so that merges have counts.
    extra = [
        "The quick brown fox jumps over the lazy dog. " * 3,
        "Tokenizers split text into pieces; byte pair encoding merges the most frequent pairs.",
        "def main():\n    return 0\n\nif __name__ == '__main__':\n    main()\n",
        "Numbers like 2024, 3.14 and 1,000 appear in text. Emails like a@b.c too.",
    ]
    return (texts + extra) * 4


def train_byte_level(texts):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.train_from_iterator(corpus(texts), trainer)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False),
                            AddedToken("<rs>", rstrip=True, special=True, normalized=False)])
    tok.add_tokens([AddedToken("[WORD]", single_word=True, normalized=False),
                    AddedToken("hello world", normalized=True)])
    return tok


DEEPSEEK3_SPLITS = [
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*"
    "|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
]


def train_deepseek3(texts):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(tokenizers.Regex(r), behavior="isolated", invert=False) for r in DEEPSEEK3_SPLITS]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>"])
    tok.train_from_iterator(corpus(texts), trainer)
    return tok


def train_spm(texts):
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    specials = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=1000, show_progress=False, special_tokens=specials,
                                  limit_alphabet=120)
    tok.train_from_iterator(corpus(texts), trainer)
    # The byte tokens are vocabulary entries of a SentencePiece model, not added tokens.
    j = json.loads(tok.to_str())
    j["added_tokens"] = [a for a in j["added_tokens"] if not a["content"].startswith("<0x")]
    tok = Tokenizer.from_str(json.dumps(j))
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    return tok


def write(name, tok_json, config, out_dir, texts, source):
    d = out_dir / name
    d.mkdir(parents=True, exist_ok=True)
    j = json.loads(tok_json)  # as given: merges keep their form ("a b" strings or pairs)
    (d / "tokenizer.json").write_text(json.dumps(j, ensure_ascii=False, separators=(",", ":")))
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))  # the oracle reads what we commit
    if config is not None:
        (d / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1))
    cases = []
    for t in texts:
        ids = tok.encode(t, add_special_tokens=False).ids
        c = {"text": t, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)}
        with_special = tok.encode(t, add_special_tokens=True).ids
        if with_special != ids:
            c["ids_with_special"] = with_special
        cases.append(c)
    (d / "ids.json").write_text(json.dumps({"source": source, "tokenizers": tokenizers.__version__,
                                            "cases": cases}, ensure_ascii=False, indent=0))
    same = sum(c["decoded"] == c["text"] for c in cases)
    print(f"{d}: {len(cases)} texts, {sum(len(c['ids']) for c in cases)} ids, decode == text on {same}")


def shrink(tok_json, keep):
    """The tokenizer with its first `keep` vocabulary ids, the merges among them and its added
    tokens renumbered after them: a small seed for fuzz/fuzz_tokenizer_json.cpp."""
    j = json.loads(tok_json)
    m = j["model"]
    m["vocab"] = {t: i for t, i in m["vocab"].items() if i < keep}
    pairs = [x.split(" ", 1) if isinstance(x, str) else x for x in m["merges"]]
    m["merges"] = [p for p in pairs if p[0] in m["vocab"] and p[1] in m["vocab"] and p[0] + p[1] in m["vocab"]]
    next_id = keep
    for a in j["added_tokens"]:
        if a["id"] >= keep:
            a["id"] = next_id
            next_id += 1
    return json.dumps(j, ensure_ascii=False, separators=(",", ":"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "tokenizers"))
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--fuzz-seeds", action="store_true",
                    help="write small seeds (the tiny tokenizers cut to ~300 ids) to fuzz/corpus/tokenizer_json/")
    ap.add_argument("--source", action="append", default=[], help="NAME=text naming where a file came from")
    ap.add_argument("inputs", nargs="*", help="NAME=PATH")
    a = ap.parse_args()
    texts = json.loads(TEXTS.read_text())
    sources = dict(s.split("=", 1) for s in a.source)
    out = pathlib.Path(a.out)
    for spec in a.inputs:
        name, path = spec.split("=", 1)
        p = pathlib.Path(path)
        tj = p / "tokenizer.json" if p.is_dir() else p
        cfg_path = tj.parent / "tokenizer_config.json"
        config = json.loads(cfg_path.read_text()) if cfg_path.exists() else None
        write(name, tj.read_text(encoding="utf-8"), config, out, texts, sources.get(name, str(path)))
    if a.train:
        write("tiny-bytelevel", train_byte_level(texts).to_str(), None, out, texts,
              f"trained by tools/gen_tokenizer_fixtures.py with tokenizers {tokenizers.__version__}")
        write("tiny-spm", train_spm(texts).to_str(), {"add_bos_token": True, "bos_token": "<s>", "eos_token": "</s>"},
              out, texts, f"trained by tools/gen_tokenizer_fixtures.py with tokenizers {tokenizers.__version__}")
        write("tiny-deepseek3", train_deepseek3(texts).to_str(), None, out, texts,
              f"trained by tools/gen_tokenizer_fixtures.py with tokenizers {tokenizers.__version__}")
    if a.fuzz_seeds:
        seeds = ROOT / "fuzz" / "corpus" / "tokenizer_json"
        seeds.mkdir(parents=True, exist_ok=True)
        for name, tok, keep in [("bytelevel", train_byte_level(texts), 300), ("spm", train_spm(texts), 330)]:
            small = shrink(tok.to_str(), keep)
            Tokenizer.from_str(small)  # still a valid tokenizer for `tokenizers`
            (seeds / f"{name}.json").write_text(small)
            print(f"wrote {seeds / name}.json: {len(small)} bytes")
        # The other pipelines we read, on the same small vocabularies.
        b = json.loads((seeds / "bytelevel.json").read_text())
        byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
        v = json.loads(json.dumps(b))
        v["pre_tokenizer"], v["normalizer"] = byte_level, None
        v["model"]["merges"] = [" ".join(p) for p in b["model"]["merges"]]
        variants = {"gpt2-strings": v}
        v = json.loads(json.dumps(b))
        v["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level]}
        variants["smollm"] = v
        v = json.loads(json.dumps(b))
        v["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = QWEN2_REGEX.replace(r"\p{N}|", r"\p{N}{1,3}|", 1)
        variants["llama3"] = v
        v = json.loads((seeds / "spm.json").read_text())
        v["pre_tokenizer"] = None
        v["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                               {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
        variants["spm-legacy"] = v
        for name, v in variants.items():
            text = json.dumps(v, ensure_ascii=False, separators=(",", ":"))
            Tokenizer.from_str(text)
            (seeds / f"{name}.json").write_text(text)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes fixtures/tokenizer/smollm2.json: token ids of a varied text set by HF `tokenizers`, and
chat prompts rendered by Jinja2 from the GGUF's own tokenizer.chat_template.

The oracle is an HF `tokenizers` BPE built from the GGUF's vocabulary and merges with SmolLM2's
published tokenizer.json pipeline: pre-tokenizer Sequence[Digits(individual_digits=True),
ByteLevel(add_prefix_space=False, use_regex=True)], ByteLevel decoder, the 17 control tokens as
special added tokens. For comparison it also records the ids of transformers' own GGUF import
(AutoTokenizer.from_pretrained(dir, gguf_file=...)), which drops the Digits step; the two agree on
every text here exactly when the vocabulary has no merge across a digit boundary.

Run: /path/to/python tools/gen_smollm2_tokenizer_fixture.py MODEL.gguf
     (needs: pip install gguf tokenizers transformers jinja2)
"""
import json
import os
import pathlib
import sys

import gguf
import jinja2
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, AddedToken

TEXTS = [
    "Hello world",
    "Hello, world! How are you doing today?",
    "The quick brown fox jumps over the lazy dog.",
    "It's, I'm, you're, we've, they'll, he'd, DON'T, 'quoted' words",
    "  leading spaces and trailing spaces   ",
    "tabs\there\tand\nnewlines\n\n\nmultiple\r\nCRLF",
    "a  b   c    d",
    "   \n   \n",
    "Numbers: 0 7 42 3.14159 1,000,000 2024-11-30 +1e-9 0xDEADBEEF",
    "123456789012345678901234567890",
    "x² ½ ⅓ Ⅻ ٣٤٥ ४२ 𝟙𝟚",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 1 << 3); return 0; }\n",
    "for (auto& [k, v] : map) { sum += v * 0.5f; }  // C++17",
    "<div class=\"x\">&amp; <b>bold</b></div>",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "Voilà! L'été dernier, nous sommes allés à Paris.",
    "Größere Äpfel schmecken süß, sagte der Bäcker.",
    "¿Dónde está la biblioteca? ¡Muy bien!",
    "Привет, мир! Как дела?",
    "Γειά σου Κόσμε",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "你好，世界！今天天气很好。",
    "日本語のテキストとカタカナ、ひらがな。",
    "안녕하세요 세계",
    "ภาษาไทย ไม่มีช่องว่าง",
    "Emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ ✨",
    "Math: ∀x ∈ ℝ, x² ≥ 0; ∑ᵢ aᵢ = ∫ f(x) dx",
    "Symbols: @#$%^&*()_+-=[]{}|;':\",./<>?`~",
    "\u00a0non-breaking\u00a0space and\u2003em space\u3000ideographic",
    "zero\u200bwidth joiner\u200d and soft\u00adhyphen",
    "'s 's 'S ''s '''",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more<file_sep><filename>a.py",
    "<|im_start <|im_end|>> <|unknown|>",
    "",
    " ",
    "a",
    "\n",
    "The café's naïve coöperation — “quotes” and ‘single’ … ellipsis",
    "https://example.com/path?query=1&x=y#frag user@example.org",
    "ALL CAPS SENTENCE WITH NUMBERS 123 AND SYMBOLS !!!",
    "mixedCaseIdentifier snake_case_name kebab-case-name SCREAMING_SNAKE",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
    "ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation.",
    "          ",
    "!!!???...,,,;;;",
    "Ünïcödé ǅ ǈ ǋ ǲ titlecase ß ẞ",
]

CHATS = [
    {"messages": [{"role": "user", "content": "What is the capital of France?"}], "add_generation_prompt": True},
    {"messages": [{"role": "system", "content": "You are terse."},
                  {"role": "user", "content": "Hi"}], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
                  {"role": "user", "content": "Tell me a joke."}], "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "no prompt"}], "add_generation_prompt": False},
]


def main():
    path = sys.argv[1]
    r = gguf.GGUFReader(path)
    f = lambda k: r.fields[k].contents()
    tokens, types, merges = f("tokenizer.ggml.tokens"), f("tokenizer.ggml.token_type"), f("tokenizer.ggml.merges")
    vocab = {t: i for i, t in enumerate(tokens)}
    bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges], ignore_merges=False)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                            for i in range(len(tokens)) if types[i] == 3])

    hf = None
    try:
        from transformers import AutoTokenizer
        hf = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    except Exception as e:  # recorded, not fatal
        print("transformers GGUF import failed:", e)

    cases = []
    for t in TEXTS:
        ids = tok.encode(t, add_special_tokens=False).ids
        c = {"text": t, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)}
        if hf is not None:
            c["ids_transformers_gguf"] = hf.encode(t, add_special_tokens=False)
        cases.append(c)

    env = jinja2.Environment(trim_blocks=False, lstrip_blocks=False)
    tmpl = env.from_string(f("tokenizer.chat_template"))
    chats = []
    for ch in CHATS:
        text = tmpl.render(messages=ch["messages"], add_generation_prompt=ch["add_generation_prompt"])
        chats.append(dict(ch, text=text, ids=tok.encode(text, add_special_tokens=False).ids))

    out = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tokenizer" / "smollm2.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"model": os.path.basename(path), "cases": cases, "chats": chats},
                              ensure_ascii=False, indent=1))
    diff = sum(1 for c in cases if "ids_transformers_gguf" in c and c["ids_transformers_gguf"] != c["ids"])
    print(f"wrote {out}: {len(cases)} texts, {len(chats)} chats; transformers' GGUF import differs on {diff}")


if __name__ == "__main__":
    main()

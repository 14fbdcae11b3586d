#!/usr/bin/env python3
"""Writes fixtures/hf/tokenizer32.gguf: a GGUF holding only a 32-token byte-level BPE tokenizer
(tokenizer.ggml.* keys as llama.cpp's converter writes them; pre-tokenizer "gpt-2"), the vocabulary size of the tiny
fixtures/hf/* models. `nvfp4 convert fixtures/hf/X out.gguf --tokenizer fixtures/hf/tokenizer32.gguf`
then gives a GGUF that both our runtime and llama.cpp can run on text (tools/check_llamacpp_interop.py).

Tokens: 0 "<|endoftext|>" (control; bos and eos), 1 "Ġ" (space), 2-27 "a".."z", 28 ".", 29 ",",
30 "ab", 31 "Ġa"; merges "a b", "Ġ a".

Run: /work/tools-venv/v/bin/python tools/gen_tiny_tokenizer_gguf.py  (needs PyPI gguf)
"""
import pathlib

import gguf

out = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "hf" / "tokenizer32.gguf"
tokens = ["<|endoftext|>", "\u0120"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + [".", ",", "ab", "\u0120a"]
assert len(tokens) == 32
types = [gguf.TokenType.CONTROL] + [gguf.TokenType.NORMAL] * 31
w = gguf.GGUFWriter(str(out), arch="llama")
w.add_tokenizer_model("gpt2")
w.add_tokenizer_pre("gpt-2")
w.add_token_list(tokens)
w.add_token_types(types)
w.add_token_merges(["a b", "\u0120 a"])
w.add_bos_token_id(0)
w.add_eos_token_id(0)
w.add_add_bos_token(False)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("wrote", out)

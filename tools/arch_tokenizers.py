"""Tiny real tokenizers of three families, trained with `tokenizers` (for tools/gen_arch_fixtures.py).

llama: byte-level BPE with the Llama 3 Split pattern; <|begin_of_text|> prepended (TemplateProcessing).
qwen2 / qwen3: byte-level BPE with the Qwen2 Split pattern; no BOS.
mistral: SentencePiece-style BPE (Llama 2 / Mistral v0.1 layout): <unk> <s> </s> at 0..2, the
byte-fallback tokens <0x00>..<0xFF> at 3..258, learned pieces after; spaces as U+2581 through a
Prepend + Replace normalizer, no pre-tokenizer; <s> prepended.
Special tokens follow the learned vocabulary for the byte-level families (as in Llama 3 and Qwen2).
The chat templates are the families' usual ones, written out here (Llama 3 headers, ChatML,
Mistral [INST]).
"""
import json

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

LLAMA3_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")

LLAMA3_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
                   "'<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
                   "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
CHATML_TEMPLATE = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                   "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
                   "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
                   "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
MISTRAL_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
                    "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
                    "{{ message['content'] + eos_token }}{% endif %}{% endfor %}")

SPECIALS = {
    "llama": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    "qwen": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
}


def _byte_level(pattern, specials, corpus, n_learned):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=n_learned, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return tok


def _sentencepiece_bpe(corpus, n_total):
    # Learn pieces with a Metaspace split (pieces never cross a word start), then lay the vocabulary
    # out as the SentencePiece converter does and encode without a pre-tokenizer.
    t = Tokenizer(models.BPE())
    t.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="never", split=True)
    fixed = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=n_total - len(fixed), show_progress=False, limit_alphabet=120)
    t.train_from_iterator(corpus, trainer)
    learned = json.loads(t.to_str())["model"]
    vocab = {s: i for i, s in enumerate(fixed)}
    for s, _ in sorted(learned["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(s, len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in learned["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in fixed[:3]])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    return tok


def make(arch, corpus):
    """A transformers PreTrainedTokenizerFast for `arch` (llama, mistral, qwen2, qwen3)."""
    from transformers import PreTrainedTokenizerFast
    if arch == "llama":
        tok = _byte_level(LLAMA3_PAT, SPECIALS["llama"], corpus, 500)
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                                           special_tokens=[("<|begin_of_text|>", bos)])
        return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                       chat_template=LLAMA3_TEMPLATE)
    if arch in ("qwen2", "qwen3"):
        tok = _byte_level(QWEN2_PAT, SPECIALS["qwen"], corpus, 500)
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                       chat_template=CHATML_TEMPLATE)
    if arch == "mistral":
        tok = _sentencepiece_bpe(corpus, 512)
        return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                       chat_template=MISTRAL_TEMPLATE)
    raise ValueError(arch)


def token_ids(arch, tok):
    """bos/eos/pad ids for the model config."""
    ids = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}
    return {k: v for k, v in ids.items() if v is not None}

#!/usr/bin/env python3
"""Renders each fixtures/chat_templates/*.jinja with transformers' own chat-template renderer
(transformers.utils.chat_template_utils.render_jinja_template, what apply_chat_template calls)
over a fixed set of conversations, and writes fixtures/chat_templates/expected.json. Templates
that raise (raise_exception) are recorded with the message. strftime_now is pinned to DATE so that
the output is reproducible (transformers' version reads the clock).

    /work/tools-venv/v/bin/python tools/gen_chat_template_fixtures.py
"""
import ast
import datetime
import json
import os
import sys

import jinja2
import transformers
from transformers import PreTrainedTokenizerFast
from transformers.utils import chat_template_utils as ctu
import tokenizers

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DIR = os.path.join(ROOT, "fixtures", "chat_templates")
DATE = datetime.date(2025, 3, 9)

# name -> (bos_token, eos_token) as the model's tokenizer defines them.
TEMPLATES = {
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "llama3.2": ("<|begin_of_text|>", "<|eot_id|>"),
    "qwq-32b": ("", "<|im_end|>"),
    "qwen3": ("", "<|im_end|>"),
    "qwen3.5": ("", "<|im_end|>"),
    "qwen3.5-small": ("", "<|im_end|>"),
    "qwen3.6": ("", "<|im_end|>"),
    "mistral-nemo": ("<s>", "</s>"),
    "gemma2": ("<bos>", "<eos>"),
    "gemma4": ("<bos>", "<eos>"),
    "nemotron-3-nano": ("", "<|im_end|>"),
    "muse-glimmer": ("<|begin_of_text|>", "<|end_of_text|>"),
    "deepseek-r1-distill-qwen": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "phi3.5": ("<s>", "<|endoftext|>"),
    "chatml": ("", "<|im_end|>"),
    "features": ("<s>", "</s>"),
}

TRICKY = 'héllo 世界 🙂\n"double" \'single\' {braces} {{ not jinja }} {% nor this %}\\ back\ttab  '
S = {"role": "system", "content": "You are a terse assistant.\nAnswer briefly."}
U1 = {"role": "user", "content": "What is 2+2?"}
A1 = {"role": "assistant", "content": "4."}
U2 = {"role": "user", "content": "And 3+3?"}
A_THINK = {"role": "assistant", "content": "<think>\nAdd them.\n</think>\n\nIt is 4."}
CONVERSATIONS = {
    "system_user": [S, U1],
    "user_only": [U1],
    "multi_turn": [U1, A1, U2],
    "system_multi_turn": [S, U1, A1, U2],
    "ends_with_assistant": [U1, A1],
    "tricky_content": [{"role": "user", "content": TRICKY}],
    "padded_content": [{"role": "system", "content": "  sys  \n"},
                       {"role": "user", "content": "\n  hi there \n\n"}],
    "empty_content": [{"role": "user", "content": ""}],
    "think_in_history": [U1, A_THINK, U2],
    "think_last": [U1, A_THINK],
    "two_users": [U1, U2],
    "assistant_first": [A1, U1],
    "long_multi_turn": [S] + [U1, A1] * 4 + [U2],
    "no_user": [S, A1],
    "system_late": [U1, A1, S, U2],
    "think_two_turns": [S, U1, A_THINK, U2, {"role": "assistant", "content": "<think>\nSix.\n</think>\nIt is 6."}],
}
# Conversations only some templates take as transformers gives them: content as a list of text
# parts (Qwen3.5/3.6 render each part's text; nvfp4 joins the parts, as its server does).
ONLY = {"content_parts": ("qwen3.5", "qwen3.5-small", "qwen3.6")}
CONVERSATIONS["content_parts"] = [
    {"role": "system", "content": [{"type": "text", "text": "Be brief. "}, {"type": "text", "text": "Be exact."}]},
    {"role": "user", "content": [{"type": "text", "text": "What is "}, {"type": "text", "text": "2+2?"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "<think>\nsum\n</think>\n\n4."}]},
    {"role": "user", "content": [{"type": "text", "text": "Sure?"}]}]
SNIPPET_MESSAGES = [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
                    {"role": "user", "content": "u2"}]
THINKING = [{}, {"enable_thinking": False}, {"enable_thinking": True}]
EXTRAS = {"qwen3": THINKING, "qwen3.5": THINKING, "qwen3.5-small": THINKING,
          "qwen3.6": THINKING + [{"preserve_thinking": True}],
          "gemma4": THINKING,
          "nemotron-3-nano": THINKING + [{"truncate_history_thinking": False}],
          "muse-glimmer": [{}, {"reasoning_strength": "low"},
                           {"knowledge_cutoff": "2025-06-01", "current_date": "2026-12-08"}],
          "features": [{}, {"enable_thinking": False}]}
# Templates whose file is derived from another one (the origin holds training-only tags): every
# case must render to the same bytes through the origin (fixtures/chat_templates/README.md).
ORIGINS = {"muse-glimmer": "sources/muse_glimmer_training.jinja"}


def render(template, messages, agp, bos, eos, extra):
    compiled = ctu._compile_jinja_template(template)
    compiled.environment.globals["strftime_now"] = lambda fmt: DATE.strftime(fmt)
    out, _ = ctu.render_jinja_template(conversations=[messages], chat_template=template,
                                       add_generation_prompt=agp, bos_token=bos, eos_token=eos,
                                       **extra)
    return out[0]


def check_origin(name, case, msgs, agp, bos, eos, extra):
    """The derived template renders what its origin renders (or raises the same)."""
    if name not in ORIGINS:
        return
    with open(os.path.join(DIR, ORIGINS[name]), encoding="utf-8", newline="") as f:
        origin = f.read()
    try:
        other = {"text": render(origin, msgs, agp, bos, eos, extra)}
    except jinja2.exceptions.TemplateError as e:
        other = {"error": str(e)}
    if other.get("text") != case.get("text") or ("error" in other) != ("error" in case):
        sys.exit(f"{name} differs from its origin {ORIGINS[name]} on {case['conversation']}")


def check_apply_chat_template(template, bos, eos):
    """The same text through apply_chat_template on a tokenizer object (no hub)."""
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({"<unk>": 0, bos or "<b>": 1, eos: 2},
                                                           unk_token="<unk>"))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=template,
                                   bos_token=bos or None, eos_token=eos)
    ctu._compile_jinja_template(template).environment.globals["strftime_now"] = \
        lambda fmt: DATE.strftime(fmt)
    a = fast.apply_chat_template([S, U1], tokenize=False, add_generation_prompt=True)
    b = render(template, [S, U1], True, bos, eos, {})
    if bos and a != b:
        sys.exit(f"apply_chat_template and render_jinja_template differ:\n{a!r}\n{b!r}")


def main():
    cases = []
    templates = {}
    for name, (bos, eos) in TEMPLATES.items():
        with open(os.path.join(DIR, name + ".jinja"), encoding="utf-8", newline="") as f:
            text = f.read()
        templates[name] = {"file": name + ".jinja", "bos_token": bos, "eos_token": eos}
        for conv_name, msgs in CONVERSATIONS.items():
            if name not in ONLY.get(conv_name, (name,)):
                continue
            for agp in (False, True):
                for extra in EXTRAS.get(name, [{}]):
                    case = {"template": name, "conversation": conv_name, "messages": msgs,
                            "add_generation_prompt": agp, "extra": extra,
                            "date": DATE.isoformat()}
                    try:
                        case["text"] = render(text, msgs, agp, bos, eos, extra)
                    except jinja2.exceptions.TemplateError as e:
                        case["error"] = str(e)
                    check_origin(name, case, msgs, agp, bos, eos, extra)
                    cases.append(case)
        try:
            check_apply_chat_template(text, bos, eos)
        except jinja2.exceptions.TemplateError:
            pass
    snippets = []
    with open(os.path.join(DIR, "snippets.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            text = ast.literal_eval(line)
            case = {"template": text}
            try:
                case["text"] = render(text, SNIPPET_MESSAGES, True, "<s>", "</s>", {})
            except (jinja2.exceptions.TemplateError, TypeError, ValueError, ZeroDivisionError) as e:
                case["error"] = type(e).__name__
            snippets.append(case)
    out = {"generator": "tools/gen_chat_template_fixtures.py",
           "transformers": transformers.__version__, "jinja2": jinja2.__version__,
           "templates": templates, "cases": cases, "snippet_messages": SNIPPET_MESSAGES,
           "snippets": snippets}
    with open(os.path.join(DIR, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    n_err = sum("error" in c for c in cases)
    print(f"{len(cases)} cases ({n_err} raise) over {len(templates)} templates; {len(snippets)} snippets")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes a calibration text for `nvfp4 convert --quantize-method search --calibrate` from the
long descriptions (README: prose, Markdown, code samples) that installed PyPI packages carry in their
METADATA, a few thousand characters from each, so the text shares nothing with data/quality.txt
(the held-out text of scripts/quant-table.sh). The text is not committed (third-party prose);
run this to recreate it.

Usage: python tools/calibration_text.py OUT.txt [--chars-per-package 4000] [PACKAGE ...]
       (default packages: tqdm regex rich psutil sentencepiece; any installed ones work)
"""
import argparse
import importlib.metadata as md
import pathlib
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("packages", nargs="*", default=["tqdm", "regex", "rich", "psutil", "sentencepiece"])
    ap.add_argument("--chars-per-package", type=int, default=4000)
    a = ap.parse_args()
    parts = []
    for name in a.packages:
        try:
            meta = md.distribution(name).metadata
        except md.PackageNotFoundError:
            sys.exit(f"calibration_text: package {name} is not installed")
        text = meta.get_payload() or meta.get("Description") or ""
        if len(text) < 1000:
            sys.exit(f"calibration_text: {name} has no long description ({len(text)} characters)")
        parts.append(text[: a.chars_per_package])
        print(f"{name} {meta['Version']}: {min(len(text), a.chars_per_package)} characters", file=sys.stderr)
    pathlib.Path(a.out).write_text("\n\n".join(parts))


if __name__ == "__main__":
    main()

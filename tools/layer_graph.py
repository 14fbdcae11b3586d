#!/usr/bin/env python3
"""The layers' graphs: which folder of src/ includes which (include graph), and which library needs
which other library's symbols (link graph, from `nm` on the built static libraries and the CLI's
objects). Prints both and exits 1 when an arrow runs up the layer order below or a graph has a
circle (a layer may use any layer below it, never one above).

    python3 tools/layer_graph.py [BUILD_DIR]     (BUILD_DIR default: build; without it, or without
                                                 its libraries, only the include graph is checked)
"""
import os
import re
import subprocess
import sys

# Bottom to top: each folder of src/ is one library (nvfp4_<folder>; cli is the executables).
LAYERS = ["base", "format", "kernels", "io", "text", "ops", "models", "runtime", "convert", "server", "cli"]

# The public headers (include/nvfp4/) by the layer that implements them. model.h declares the types
# the ops work on (ModelConfig, Mode, KvType) beside the Model/Sequence/forward API that models
# (Model::load) and runtime (Sequence, forward) implement: it belongs to the lowest, ops.
PUBLIC = {
    "atomic_file.h": "base", "error.h": "base", "huge_pages.h": "base", "mapped_file.h": "base", "memory_info.h": "base",
    "temp_cleanup.h": "base", "thread_pool.h": "base",
    "codec.h": "format", "ggml_types.h": "format", "layout.h": "format", "matrix.h": "format",
    "q8_0.h": "format", "quantize.h": "format", "validate.h": "format",
    "dense.h": "kernels", "fp8_linear.h": "kernels", "kernels.h": "kernels", "kernels_ref.h": "kernels", "linear.h": "kernels",
    "arch.h": "io", "checkpoint.h": "io", "gguf.h": "io", "gguf_writer.h": "io", "safetensors.h": "io",
    "chat.h": "text", "tokenizer.h": "text",
    "model.h": "ops", "sequence_state.h": "ops",
    "draft.h": "runtime", "mtp_draft.h": "runtime", "dflash_draft.h": "runtime", "gemma4_assistant.h": "runtime", "generate.h": "runtime", "sampler.h": "runtime", "speculate.h": "runtime",
    "calibrate.h": "convert", "convert.h": "convert", "verify.h": "convert",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def include_graph(root):
    """{(from, to): example 'file -> header'} over src/<layer>/ files."""
    edges, errors = {}, []
    public = set(os.listdir(os.path.join(root, "include", "nvfp4")))
    for h in sorted(public - set(PUBLIC)):
        errors.append(f"include/nvfp4/{h}: no layer in tools/layer_graph.py PUBLIC")
    for layer in LAYERS:
        d = os.path.join(root, "src", layer)
        if not os.path.isdir(d):
            errors.append(f"src/{layer}/: missing")
            continue
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                head, _, rest = inc.partition("/")
                if head == "nvfp4":
                    to = PUBLIC.get(rest)
                    if to is None:
                        errors.append(f"src/{layer}/{name}: includes {inc}, a public header of no layer")
                        continue
                elif head in LAYERS:
                    to = head
                else:
                    continue
                if to != layer:
                    edges.setdefault((layer, to), f"src/{layer}/{name} -> {inc}")
    for name in sorted(os.listdir(os.path.join(root, "src"))):
        if os.path.isdir(os.path.join(root, "src", name)) and name not in LAYERS:
            errors.append(f"src/{name}/: a folder that is no layer (add it to LAYERS and CMakeLists.txt)")
    return edges, errors


def nm_symbols(files):
    """(strong definitions, undefined) over object files / archives: sets of mangled names."""
    out = subprocess.run(["nm", "-g", "--defined-only", *files], capture_output=True, text=True, check=True).stdout
    strong = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRC":  # not W/V/u: inline and template code lives everywhere
            strong.add(parts[2])
    out = subprocess.run(["nm", "-g", "--undefined-only", *files], capture_output=True, text=True, check=True).stdout
    undef = {line.split()[-1] for line in out.splitlines() if line.strip() and not line.endswith(":")}
    return strong, undef


def link_graph(build):
    libs = {}
    for layer in LAYERS[:-1]:
        a = os.path.join(build, f"libnvfp4_{layer}.a")
        if not os.path.exists(a):
            return None, [f"{a}: not built"]
        libs[layer] = [a]
    cli_dir = os.path.join(build, "CMakeFiles", "nvfp4.dir", "src", "cli")
    if os.path.isdir(cli_dir):
        libs["cli"] = [os.path.join(cli_dir, f) for f in sorted(os.listdir(cli_dir)) if f.endswith(".o")]
    defs, undefs = {}, {}
    for layer, files in libs.items():
        defs[layer], undefs[layer] = nm_symbols(files)
    owner = {}
    errors = []
    for layer in libs:
        for s in defs[layer]:
            if s in owner and owner[s] != layer:
                errors.append(f"{s}: defined in both {owner[s]} and {layer}")
            owner[s] = layer
    edges = {}
    for layer in libs:
        for s in sorted(undefs[layer] - defs[layer]):
            to = owner.get(s)
            if to and to != layer:
                edges.setdefault((layer, to), s)
    return edges, errors


def demangle(s):
    try:
        return subprocess.run(["c++filt", s], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return s


def check(kind, edges):
    """Prints the graph; returns the arrows that run up (each one closes a circle with the order)."""
    rank = {l: i for i, l in enumerate(LAYERS)}
    print(f"== {kind} graph (bottom to top: {' -> '.join(LAYERS)})")
    bad = []
    for layer in LAYERS:
        tos = sorted({t for (f, t) in edges if f == layer}, key=rank.get)
        print(f"  {layer:8s} -> {', '.join(tos) if tos else '(nothing)'}")
        for t in tos:
            if rank[t] > rank[layer]:
                bad.append(f"{kind}: {layer} -> {t} runs up ({edges[(layer, t)]})")
    # A circle in the graph itself (an upward arrow need not close one, but is refused anyway).
    seen, stack, circles = set(), [], []

    def visit(n):
        if n in stack:
            circles.append(" -> ".join(stack[stack.index(n):] + [n]))
            return
        if n in seen:
            return
        seen.add(n)
        stack.append(n)
        for (f, t) in edges:
            if f == n:
                visit(t)
        stack.pop()

    for l in LAYERS:
        visit(l)
    bad += [f"{kind}: circle {c}" for c in circles]
    return bad


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build")
    problems = []
    inc, errors = include_graph(root)
    problems += errors
    problems += check("include", inc)
    links, errors = link_graph(build)
    if links is None:
        print(f"== link graph: skipped ({errors[0]})")
    else:
        problems += errors
        bad = check("link", links)
        problems += [b.replace(b.split("(")[-1], demangle(b.split("(")[-1][:-1]) + ")") if "(" in b else b for b in bad]
    if problems:
        print("layer-graph: FAILED")
        for p in problems:
            print("  " + p)
        return 1
    print("layer-graph: no arrow runs up, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())

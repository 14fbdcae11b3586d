#!/usr/bin/env bash
# The end-to-end table of docs/BENCHMARKS.md: `nvfp4 bench model` on the README's NVFP4 SmolLM2,
# beside llama.cpp (PyPI llama-cpp-python, built by scripts/setup-bench-peer.sh) on the same GGUF
# and on its own Q4_0 of the model, with the KV cache in F32 (our default) and in F16 (llama.cpp's
# default), each side with the same KV type. One JSON object per run to OUT (default: stdout).
# Run it on an idle machine: both engines spin their threads, and a busy core ruins the figures.
# Usage: bash scripts/bench-model.sh [OUT.jsonl] [THREADS] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/dev/stdout}
threads=${2:-$(nproc)}
reps=${3:-5}
M=$(bash scripts/model-path.sh)
ours=models/smollm2-135m-instruct-nvfp4.gguf
[ -f "$ours" ] || build/nvfp4 convert "$M" "$ours" --verify >&2
peer=()
if [ -x build-peer/venv/bin/python ]; then
  peer=(--peer-python build-peer/venv/bin/python --peer-q4_0-source "$M")
else
  echo "bench-model: no llama.cpp peer (run scripts/setup-bench-peer.sh); its columns stay null" >&2
fi
{
  for kv in f32 f16; do
    echo "bench-model: KV $kv" >&2
    build/nvfp4 bench model -m "$ours" -t "$threads" --reps "$reps" --kv "$kv" "${peer[@]}" --json |
      python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))'
  done
} > "$out"

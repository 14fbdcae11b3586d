#!/usr/bin/env bash
# The quality table of docs/BENCHMARKS.md: NVFP4 SmolLM2 in each mode against the F32 reference
# (the Q4_1 weights dequantized), beside the same model quantized by ggml's own NVFP4 and Q4_0
# through PyPI llama-cpp-python (scripts/setup-bench-peer.sh builds it into build-peer/venv).
# Every row runs `nvfp4 quality` on data/quality.txt at --ctx 512; one JSON object per row goes to
# OUT (default: stdout). Usage: bash scripts/quality-table.sh [OUT.jsonl] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/dev/stdout}
threads=${2:-$(nproc)}
M=$(bash scripts/model-path.sh)
ours=models/smollm2-135m-instruct-nvfp4.gguf
[ -f "$ours" ] || build/nvfp4 convert "$M" "$ours" --verify >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
peer=build-peer/venv/bin/python
have_peer=0
if [ -x "$peer" ] && "$peer" -c "import llama_cpp" 2>/dev/null; then
  have_peer=1
  "$peer" tools/llama_cpp_bench.py "$M" --quantize-nvfp4 "$work/ggml-nvfp4.gguf" --embd-f16 --threads "$threads" >&2 2>/dev/null
  "$peer" tools/llama_cpp_bench.py "$M" --quantize-q4_0 "$work/ggml-q4_0.gguf" --embd-f16 --threads "$threads" >&2 2>/dev/null
else
  echo "quality-table: no llama.cpp peer (run scripts/setup-bench-peer.sh); ggml rows skipped" >&2
fi
row() {  # label, then nvfp4 quality arguments
  local label=$1; shift
  echo "quality-table: $label" >&2
  build/nvfp4 quality --ref "$M" -f data/quality.txt --ctx 512 -t "$threads" --json "$@" |
    python3 -c 'import json,sys; j=json.load(sys.stdin); j["row"]=sys.argv[1]; print(json.dumps(j))' "$label"
}
{
  row "nvfp4 a16q8" -m "$ours" --precision a16q8
  row "nvfp4 a16" -m "$ours" --precision a16
  row "nvfp4 w4a4 (calibrated)" -m "$M" --quantize --calibrate data/calibration.txt --precision w4a4
  if [ "$have_peer" = 1 ]; then
    row "ggml NVFP4, a16q8" -m "$work/ggml-nvfp4.gguf" --precision a16q8
    row "ggml NVFP4, a16" -m "$work/ggml-nvfp4.gguf" --precision a16
    row "ggml Q4_0, f32" -m "$work/ggml-q4_0.gguf"
  fi
} > "$out"

#!/usr/bin/env bash
# The quantizer table of docs/BENCHMARKS.md: SmolLM2 quantized to NVFP4 by each method of
# `nvfp4 convert` (rtn = ModelOpt's export; search unweighted; search weighted by the activations of
# a calibration text, on the float model and on the rtn model) and by ggml's own NVFP4 quantizer
# (PyPI llama-cpp-python, scripts/setup-bench-peer.sh), each timed, then `nvfp4 quality` against
# the F32 reference on a held-out text. One JSON object per row to OUT (default: stdout).
# Usage: bash scripts/quant-table.sh [OUT.jsonl] [THREADS] [CALIB_TEXT] [HELD_OUT_TEXT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/dev/stdout}
threads=${2:-$(nproc)}
calib=${3:-data/calibration.txt}
text=${4:-data/quality.txt}
M=${NVFP4_SMOLLM2_GGUF:-$(bash scripts/model-path.sh)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
row() {  # label, file, seconds the quantization took
  echo "quant-table: $1" >&2
  build/nvfp4 quality -m "$2" --ref "$M" -f "$text" --ctx 512 -t "$threads" --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); j["row"]=sys.argv[1]; j["quantize_s"]=float(sys.argv[2]); j["calibration_text"]=sys.argv[3]; print(json.dumps(j))' "$1" "$3" "$calib"
}
timed() {  # command...: runs it, prints the wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >&2
  t1=$(date +%s.%N)
  python3 -c "print(round($t1 - $t0, 1))"
}
{
  s=$(timed build/nvfp4 convert "$M" "$work/rtn.gguf" --threads "$threads")
  row "nvfp4 rtn (= ModelOpt export)" "$work/rtn.gguf" "$s"
  s=$(timed build/nvfp4 convert "$M" "$work/search.gguf" --threads "$threads" --quantize-method search)
  row "nvfp4 search, unweighted" "$work/search.gguf" "$s"
  s=$(timed build/nvfp4 convert "$M" "$work/search-cal.gguf" --threads "$threads" --quantize-method search --calibrate "$calib")
  row "nvfp4 search, calibrated (float model)" "$work/search-cal.gguf" "$s"
  s=$(timed build/nvfp4 convert "$M" "$work/search-rtn.gguf" --threads "$threads" --quantize-method search --calibrate "$calib" --calibrate-model rtn)
  row "nvfp4 search, calibrated (rtn model, pinned)" "$work/search-rtn.gguf" "$s"
  peer=build-peer/venv/bin/python
  if [ -x "$peer" ] && "$peer" -c "import llama_cpp" 2>/dev/null; then
    s=$(timed "$peer" tools/llama_cpp_bench.py "$M" --quantize-nvfp4 "$work/ggml-nvfp4.gguf" --embd-f16 --threads "$threads")
    row "ggml NVFP4 (llama.cpp quantize)" "$work/ggml-nvfp4.gguf" "$s"
  else
    echo "quant-table: no llama.cpp peer (run scripts/setup-bench-peer.sh); ggml row skipped" >&2
  fi
} > "$out"

#!/usr/bin/env bash
# The quantizer table of docs/BENCHMARKS.md section 4: a model quantized to NVFP4 by each method of
# `nvfp4 convert` (rtn = ModelOpt's export; search unweighted; search weighted by the activations of
# a calibration text, on the float model and on the rtn model; awq, GGUF (norm-folded scales only)
# and ModelOpt directory (NVFP4_AWQ with pre_quant_scale), each also with --awq-rounding search) and
# by the peers: ModelOpt's AWQ-lite
# (mtq.quantize NVFP4_AWQ_LITE_CFG + export_hf_checkpoint) and llm-compressor's NVFP4 (oneshot),
# both on the same float model and calibration text (tools/quant_peers.py, CPU), and ggml's own
# NVFP4 quantizer (PyPI llama-cpp-python, scripts/setup-bench-peer.sh); each timed, then `nvfp4
# quality` (a16q8, --ctx 512) against the float reference on a held-out text. One JSON object per
# row to OUT (default: stdout).
#
# Usage: bash scripts/quant-table.sh [OUT.jsonl] [THREADS] [CALIB_TEXT] [HELD_OUT_TEXT]
# Environment:
#   MODEL      the input (default: the bundled SmolLM2 GGUF, $NVFP4_SMOLLM2_GGUF); also the reference
#   REF        the quality reference (default: MODEL)
#   FLOAT_DIR  the float HF directory of MODEL for the Python peers (SmolLM2: tools/gen_smollm2_hf.py's
#              models/smollm2-hf/float); unset: no ModelOpt / llm-compressor rows
#   PEERS_DIR  where tools/quant_peers.py wrote (or writes) them; when it already holds
#              times.json and the two directories they are reused (their time is the recorded one)
#   PEER_PY    python with llama_cpp (default build-peer/venv/bin/python); absent: no ggml row
#   TOOLS_PY   python with torch/modelopt/llmcompressor (default /work/tools-venv/v/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/dev/stdout}
threads=${2:-$(nproc)}
calib=${3:-data/calibration.txt}
text=${4:-data/quality.txt}
M=${MODEL:-${NVFP4_SMOLLM2_GGUF:-$(bash scripts/model-path.sh)}}
R=${REF:-$M}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
row() {  # label, file, seconds the quantization took
  echo "quant-table: $1" >&2
  build/nvfp4 quality -m "$2" --ref "$R" -f "$text" --ctx 512 -t "$threads" --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); j["row"]=sys.argv[1]; j["quantize_s"]=float(sys.argv[2]); j["calibration_text"]=sys.argv[3]; j["model"]=sys.argv[4]; print(json.dumps(j))' "$1" "$3" "$calib" "$M"
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
  s=$(timed build/nvfp4 convert "$M" "$work/awq.gguf" --threads "$threads" --quantize-method awq --calibrate "$calib")
  row "nvfp4 awq, GGUF (norm-folded groups only)" "$work/awq.gguf" "$s"
  s=$(timed build/nvfp4 convert "$M" "$work/awq-dir" --threads "$threads" --quantize-method awq --calibrate "$calib")
  row "nvfp4 awq, ModelOpt NVFP4_AWQ directory" "$work/awq-dir" "$s"
  s=$(timed build/nvfp4 convert "$M" "$work/awqs.gguf" --threads "$threads" --quantize-method awq --awq-rounding search --calibrate "$calib")
  row "nvfp4 awq + search rounding, GGUF" "$work/awqs.gguf" "$s"
  s=$(timed build/nvfp4 convert "$M" "$work/awqs-dir" --threads "$threads" --quantize-method awq --awq-rounding search --calibrate "$calib")
  row "nvfp4 awq + search rounding, ModelOpt directory" "$work/awqs-dir" "$s"
  if [ -n "${FLOAT_DIR:-}" ]; then
    pd=${PEERS_DIR:-$work/peers}
    if [ ! -f "$pd/times.json" ] || [ ! -d "$pd/modelopt-awq-lite" ] || [ ! -d "$pd/ct-nvfp4-cal" ]; then
      "${TOOLS_PY:-/work/tools-venv/v/bin/python}" tools/quant_peers.py "$FLOAT_DIR" "$pd" --calib "$calib" --ctx 512 >&2
    fi
    tm() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$pd/times.json" "$1"; }
    row "ModelOpt AWQ-lite (NVFP4_AWQ_LITE_CFG, export_hf_checkpoint)" "$pd/modelopt-awq-lite" "$(tm modelopt-awq-lite)"
    row "llm-compressor NVFP4 (oneshot)" "$pd/ct-nvfp4-cal" "$(tm ct-nvfp4-cal)"
  else
    echo "quant-table: FLOAT_DIR unset; ModelOpt AWQ-lite and llm-compressor rows skipped" >&2
  fi
  peer=${PEER_PY:-build-peer/venv/bin/python}
  if [ -x "$peer" ] && "$peer" -c "import llama_cpp" 2>/dev/null; then
    src=$M
    if [ -d "$M" ]; then  # ggml's quantizer reads a GGUF: the float HF directory as F32 GGUF first
      build/nvfp4 convert "$M" "$work/float.gguf" --keep '*' >&2
      src=$work/float.gguf
    fi
    s=$(timed "$peer" tools/llama_cpp_bench.py "$src" --quantize-nvfp4 "$work/ggml-nvfp4.gguf" --embd-f16 --threads "$threads")
    row "ggml NVFP4 (llama.cpp quantize)" "$work/ggml-nvfp4.gguf" "$s"
  else
    echo "quant-table: no llama.cpp peer (run scripts/setup-bench-peer.sh); ggml row skipped" >&2
  fi
} > "$out"

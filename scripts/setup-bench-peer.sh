#!/usr/bin/env bash
# Builds the ggml peer of `nvfp4 bench kernels` into build-peer/ (ignored by git):
#  1. downloads the llama-cpp-python sdist from PyPI (it vendors llama.cpp and ggml),
#  2. builds ggml's CPU backend from those sources (static, native, OpenMP as llama.cpp ships it),
#  3. compiles tools/bench-peer/nvfp4_peer_bench.cpp against it.
# ggml's code is never copied into this repository. Usage: bash scripts/setup-bench-peer.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out="$root/build-peer"
py=${1:-python3}
mkdir -p "$out/src"
if ! ls "$out"/src/llama_cpp_python-*.tar.gz >/dev/null 2>&1; then
  # The sdist's metadata step needs scikit-build-core; --no-build-isolation keeps pip from
  # building the whole build toolchain from source.
  "$py" -m pip install -q scikit-build-core
  "$py" -m pip download --no-deps --no-binary llama-cpp-python --no-build-isolation \
    llama-cpp-python -d "$out/src"
fi
sdist=$(ls "$out"/src/llama_cpp_python-*.tar.gz | head -1)
rm -rf "$out/llama-src" && mkdir -p "$out/llama-src"
tar xzf "$sdist" -C "$out/llama-src" --strip-components=1
ggml="$out/llama-src/vendor/llama.cpp/ggml"
grep -q "GGML_TYPE_NVFP4" "$ggml/include/ggml.h" || { echo "this llama.cpp has no NVFP4 type" >&2; exit 1; }
# Configured through llama.cpp's top level (the sdist's ggml/ alone lacks files of a standalone
# build); only the ggml targets are built.
cmake -S "$out/llama-src/vendor/llama.cpp" -B "$out/ggml" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF >/dev/null
cmake --build "$out/ggml" -j "$(nproc)" --target ggml-cpu ggml-base ggml
g++ -O2 -std=c++17 -I "$ggml/include" tools/bench-peer/nvfp4_peer_bench.cpp \
  $(find "$out/ggml" -name 'libggml.a') $(find "$out/ggml" -name 'libggml-cpu.a') \
  $(find "$out/ggml" -name 'libggml-base.a') -fopenmp -lpthread -ldl -o "$out/nvfp4-peer-bench"
echo "ggml peer: $out/nvfp4-peer-bench ($(basename "$sdist"))"

#!/usr/bin/env bash
# A second ggml peer for `nvfp4 bench kernels`, built for AVX2 machines (GGML_NATIVE=OFF: SSE4.2,
# AVX, AVX2, FMA, F16C, BMI2; no AVX-512, no VNNI), so that `bench kernels --isa avx2` on an AVX-512
# machine compares with what ggml runs on an AVX2-only CPU rather than with its AVX-512 path.
# Needs the sources that scripts/setup-bench-peer.sh unpacked into build-peer/llama-src.
# Output: build-peer/nvfp4-peer-bench-avx2 (ignored by git). Usage:
#   bash scripts/setup-bench-peer-avx2.sh
#   build/nvfp4 bench kernels --isa avx2 --peer build-peer/nvfp4-peer-bench-avx2
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(pwd)/build-peer"
lcpp="$out/llama-src/vendor/llama.cpp"
[ -f "$lcpp/ggml/include/ggml.h" ] || { echo "no $lcpp: run scripts/setup-bench-peer.sh first" >&2; exit 1; }
cmake -S "$lcpp" -B "$out/llama-avx2" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_COMMON=OFF >/dev/null
cmake --build "$out/llama-avx2" -j "$(nproc)" --target ggml ggml-base ggml-cpu
libdir=$(dirname "$(find "$out/llama-avx2" -name 'libggml-base.so' | head -1)")
g++ -O2 -std=c++17 -I "$lcpp/ggml/include" tools/bench-peer/nvfp4_peer_bench.cpp \
  -L"$libdir" -Wl,-rpath,"$libdir" -lggml -lggml-cpu -lggml-base -fopenmp -lpthread -ldl \
  -o "$out/nvfp4-peer-bench-avx2"
echo "ggml AVX2 peer: $out/nvfp4-peer-bench-avx2"

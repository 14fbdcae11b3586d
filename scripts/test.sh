#!/usr/bin/env bash
# The test command: installs what is missing, builds a Release tree (g++) and a sanitizer tree
# (clang, ASan + UBSan, with the libFuzzer targets), runs every test in both with CTest, then
# fuzzes the checkpoint parsers for a bounded time (NVFP4_FUZZ_SECONDS per target, default 30).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
NVFP4_SMOLLM2_GGUF="$(bash scripts/model-path.sh)"
export NVFP4_SMOLLM2_GGUF
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNVFP4_SANITIZE=ON -DNVFP4_FUZZ=ON >/dev/null
cmake --build build-asan -j "$jobs"
echo "== Release tests"
ctest --test-dir build --output-on-failure -j "$jobs"
echo "== ASan+UBSan tests"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
echo "== Fuzzing the checkpoint parsers (libFuzzer, bounded)"
NVFP4_FUZZ_BUILD_DIR=build-asan bash scripts/fuzz.sh "${NVFP4_FUZZ_SECONDS:-30}"

#!/usr/bin/env bash
# The test command: installs what is missing, builds a Release tree and an ASan+UBSan tree, and
# runs every test in both with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
NVFP4_SMOLLM2_GGUF="$(bash scripts/model-path.sh)"
export NVFP4_SMOLLM2_GGUF
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVFP4_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
echo "== Release tests"
ctest --test-dir build --output-on-failure -j "$jobs"
echo "== ASan+UBSan tests"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
echo "== Fuzzing the checkpoint parsers (libFuzzer, bounded)"
bash scripts/fuzz.sh "${NVFP4_FUZZ_SECONDS:-30}"

#!/usr/bin/env bash
# ThreadSanitizer over the tests that run threads: the pool, the linear layers' dispatches, MoE and
# multi-sequence steps, and the server (HTTP threads beside the stepping thread). Not in CI (the
# build alone takes longer than CI's budget on 2 cores); run it after touching the pool or the
# server. Exit 1 on any report. scripts/tsan.supp lists the known reports and why they stay.
#   bash scripts/tsan.sh [GTEST_FILTER]
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-'ThreadPool.*:Linear.*:Moe*:StepDeterminism*:Server*:Serve*:Hybrid/*'}
launch=()
command -v ccache >/dev/null && launch=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVFP4_TSAN=ON "${launch[@]}" >/dev/null
cmake --build build-tsan -j"$(nproc)" --target nvfp4_tests
export NVFP4_SMOLLM2_GGUF=${NVFP4_SMOLLM2_GGUF:-$(bash scripts/model-path.sh)}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" build-tsan/nvfp4_tests --gtest_filter="$filter" 2>&1 | tee "$log" | grep -E "^\[  (PASSED|FAILED) " || true
if grep -q "WARNING: ThreadSanitizer" "$log" || ! grep -q "^\[  PASSED  \]" "$log" || grep -q "^\[  FAILED  \]" "$log"; then
  grep -A30 "WARNING: ThreadSanitizer" "$log" | head -60 || true
  echo "tsan: FAILED" >&2
  exit 1
fi
echo "tsan: no reports"

#!/usr/bin/env bash
# Which instruction sets the kernel tests exercised on this machine: runs the per-ISA kernel suite
# (tests/test_kernels_isa.cpp, EveryIsa/ForcedIsa.*: one instance per compiled ISA, skipped where
# the CPU lacks it) and prints, per ISA, how many of its tests ran and how many were skipped.
#   bash scripts/isa-summary.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
out="$("$build/nvfp4_tests" --gtest_filter='EveryIsa/ForcedIsa.*' 2>&1)" || { echo "$out" | tail -20; exit 1; }
best="$(NVFP4_ISA= "$build/nvfp4_tests" --gtest_filter='Dispatch.NamesParseAndTheBestIsSupported' 2>&1 |
        sed -n 's/^best ISA on this CPU: //p')"
echo "kernel ISAs on this machine (best: ${best:-?}, NVFP4_ISA=${NVFP4_ISA:-unset}):"
echo "$out" | awk '
  /^\[       OK \] EveryIsa\/ForcedIsa\./ { split($4, a, "/"); ran[a[3]]++; seen[a[3]] = 1 }
  /^\[  SKIPPED \] EveryIsa\/ForcedIsa\..* ms\)$/ { split($4, a, "/"); skip[a[3]]++; seen[a[3]] = 1 }
  /^\[  FAILED  \] EveryIsa\/ForcedIsa\..* ms\)$/ { split($4, a, "/"); fail[a[3]]++; seen[a[3]] = 1 }
  END {
    n = split("scalar avx2 avxvnni avx512", order, " ")
    for (i = 1; i <= n; i++) {
      k = order[i]
      if (!(k in seen)) { printf "  %-8s not compiled\n", k; continue }
      printf "  %-8s %s: %d ran, %d skipped (CPU lacks it), %d failed\n", k,
             (ran[k] > 0 ? "EXERCISED" : "not exercised"), ran[k], skip[k], fail[k]
    }
  }'

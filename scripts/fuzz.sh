#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a bounded time.
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET=60] [TARGET...]   (targets: gguf safetensors)
# Seeds: fuzz/corpus/<target>/ (committed; never written to). New inputs go to
# build-fuzz/corpus/<target>/, crashes to build-fuzz/artifacts/. Exit 1 when a target crashed:
# turn the artifact into a regression test (tests/test_fuzz_regressions.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf safetensors)
jobs=$(nproc)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNVFP4_FUZZ=ON -DNVFP4_SANITIZE=ON -DNVFP4_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")
mkdir -p build-fuzz/artifacts
status=0
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t"
  dict=()
  [ -f "fuzz/$t.dict" ] && dict=("-dict=fuzz/$t.dict")
  echo "== fuzz_$t for ${secs}s"
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "build-fuzz/fuzz_$t" "build-fuzz/corpus/$t" "fuzz/corpus/$t" "${dict[@]}" \
      -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="build-fuzz/artifacts/$t-" -print_final_stats=1 2>"build-fuzz/fuzz_$t.log"; then
    echo "fuzz_$t: CRASH (see build-fuzz/fuzz_$t.log and build-fuzz/artifacts/)"
    tail -40 "build-fuzz/fuzz_$t.log"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb" "build-fuzz/fuzz_$t.log" | sed "s/^/fuzz_$t /"
done
exit $status

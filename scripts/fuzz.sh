#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a bounded time.
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET=60] [TARGET...]   (targets: gguf safetensors chat_template tokenizer_json server_request hf_config)
# Seeds: fuzz/corpus/<target>/ (committed; never written to). New inputs go to
# <build>/corpus/<target>/, crashes to <build>/artifacts/. Exit 1 when a target crashed:
# turn the artifact into a regression test (tests/test_fuzz_regressions.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf safetensors chat_template tokenizer_json server_request hf_config)
jobs=$(nproc)
# NVFP4_FUZZ_BUILD_DIR: a tree already configured with clang, NVFP4_FUZZ=ON and NVFP4_SANITIZE=ON
# (scripts/test.sh shares its sanitizer tree); otherwise build-fuzz/ is configured here.
b="${NVFP4_FUZZ_BUILD_DIR:-build-fuzz}"
if ! grep -qs '^NVFP4_FUZZ:BOOL=ON' "$b/CMakeCache.txt"; then
  CC=clang CXX=clang++ cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNVFP4_FUZZ=ON -DNVFP4_SANITIZE=ON -DNVFP4_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$b" -j "$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")
mkdir -p "$b/artifacts"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$b/corpus/$t"
  dict=()
  [ -f "fuzz/$t.dict" ] && dict=("-dict=fuzz/$t.dict")
  echo "== fuzz_$t for ${secs}s"
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$b/fuzz_$t" "$b/corpus/$t" "fuzz/corpus/$t" "${dict[@]}" \
      -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$b/artifacts/$t-" -print_final_stats=1 2>"$b/fuzz_$t.log"; then
    echo "fuzz_$t: CRASH (see $b/fuzz_$t.log and $b/artifacts/)"
    tail -40 "$b/fuzz_$t.log"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb" "$b/fuzz_$t.log" | sed "s/^/fuzz_$t /"
done
exit $status

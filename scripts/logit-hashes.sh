#!/usr/bin/env bash
# Hashes of every logit of every fixture model and the bundled model (tools/logit_hashes.cpp), at
# one and two threads: what a restructuring must leave unchanged.
#   bash scripts/logit-hashes.sh [BUILD_DIR]           prints every line (f32 lines carry the ISA)
#   bash scripts/logit-hashes.sh --check [BUILD_DIR]   compares the ISA-independent lines (a16q8
#                                                      and w4a4: NVFP4, float, FP8 and mixed models) with
#                                                      tests/logit_hashes.txt; exit 1 on a change
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
build="${1:-$root/build}"
tool="$build/nvfp4_logit_hashes"
[ -x "$tool" ] || { echo "logit-hashes: $tool not built (cmake --build $build --target nvfp4_logit_hashes)" >&2; exit 2; }
cd "$root"
fixtures=()
for d in fixtures/arch/*/* fixtures/moe/*/* fixtures/hybrid/*/* fixtures/gemma4/* fixtures/gemma4-e2b/* fixtures/gemma4-moe/* fixtures/gemma4-unified/* fixtures/nemotron_h/*/* fixtures/hf/mixed fixtures/hf/modelopt fixtures/kv_fp8/*/* fixtures/mixed/*/*; do
  [ -f "$d/config.json" ] && fixtures+=("$d")
done
smol="$(bash scripts/model-path.sh)"
all() {
  for t in 1 2; do
    "$tool" --threads "$t" "${fixtures[@]}"
    "$tool" --threads "$t" --quantize "$smol" | sed "s#^$smol#smollm2-135m-instruct(--quantize)#"
  done | sort -u
}
if [ "$check" = 0 ]; then all; exit 0; fi
got="$(all | grep -v ' isa=' | grep -v ' spec n/a')"
if diff <(echo "$got") "$root/tests/logit_hashes.txt"; then
  echo "logit-hashes: $(echo "$got" | wc -l) lines equal to tests/logit_hashes.txt"
else
  echo "logit-hashes: logits changed (lines above: < now, > recorded)" >&2
  exit 1
fi

#!/usr/bin/env bash
# Two builds' kernels side by side, before a change to src/kernels lands: `nvfp4 bench kernels`
# of BEFORE and AFTER in interleaved rounds (decode, windows and prompts; one and two threads;
# weights in DRAM and in cache; the native ISA and AVX2), then each case's median over the rounds
# and AFTER / BEFORE in time. Cases slower by more than the threshold are listed at the end and the
# exit code is 1. (Section 49 of docs/BENCHMARKS.md measured a prefetch change at the model level
# only; this would have shown its 2-3x at 4096x4096 at once: section 50.)
# Usage: bash scripts/bench-kernels-ab.sh BEFORE/nvfp4 AFTER/nvfp4 [ROUNDS (3)] [THRESHOLD (1.10)]
# Run it on an idle machine; the host's noise still shows as spread, so re-run what it flags.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
before=$1 after=$2 rounds=${3:-3} threshold=${4:-1.10}
for b in "$before" "$after"; do [ -x "$b" ] || { echo "bench-kernels-ab: not an executable: $b" >&2; exit 2; }; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
isas=(native avx2)
for r in $(seq 1 "$rounds"); do
  for side in before after; do
    bin=$before
    [ "$side" = after ] && bin=$after
    for isa in "${isas[@]}"; do
      echo "bench-kernels-ab: round $r/$rounds, $side, $isa" >&2
      env_isa=()
      [ "$isa" = avx2 ] && env_isa=(env NVFP4_ISA=avx2)
      "${env_isa[@]}" "$bin" bench kernels --json --no-peer --shapes 4096x4096,14336x4096,1536x576 --n 1,8 \
        --threads 1,2 --residency dram,cache --max-case-s 2 >> "$tmp/$side-$isa.jsonl"
      "${env_isa[@]}" "$bin" bench kernels --json --no-peer --shapes 4096x4096 --n 512 --threads 1,2 \
        --residency cache --max-case-s 4 >> "$tmp/$side-$isa.jsonl"
    done
  done
done
python3 - "$tmp" "$threshold" "${isas[@]}" <<'EOF'
import json, statistics, sys
tmp, threshold, isas = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
def cases(side, isa):
    out = {}
    with open(f"{tmp}/{side}-{isa}.jsonl") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            j = json.loads(line)
            key = (isa, j["kernel"], f'{j["n_out"]}x{j["n_in"]}', j["n"], j["threads"], j["residency"])
            out.setdefault(key, []).append(j["median_ms"])
    return out
slower = []
print(f'{"isa":<7} {"kernel":<24} {"shape":<11} {"n":>4} {"thr":>3} {"res":<5} {"before_ms":>10} {"after_ms":>10} {"after/before":>12}')
for isa in isas:
    b, a = cases("before", isa), cases("after", isa)
    for key in sorted(set(b) & set(a)):
        mb, ma = statistics.median(b[key]), statistics.median(a[key])
        ratio = ma / mb if mb > 0 else float("nan")
        print(f"{key[0]:<7} {key[1]:<24} {key[2]:<11} {key[3]:>4} {key[4]:>3} {key[5]:<5} {mb:>10.3f} {ma:>10.3f} {ratio:>12.2f}")
        if ratio > threshold:
            slower.append((key, ratio))
if slower:
    print(f"\nslower than {threshold}x the time before (re-run these before believing them):")
    for key, ratio in slower:
        print(f"  {' '.join(str(k) for k in key)}: {ratio:.2f}x")
    sys.exit(1)
print(f"\nno case slower than {threshold}x")
EOF

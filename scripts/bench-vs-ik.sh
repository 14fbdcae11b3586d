#!/usr/bin/env bash
# Our NVFP4 engine beside ik_llama.cpp's fastest 4-bit CPU types on one machine, in one sitting
# (issue 37). No package registry carries ik_llama.cpp: give its source directory (a checkout of
# github ikawrakow/ik_llama.cpp; only llama-bench and llama-quantize are built).
#
#   bash scripts/bench-vs-ik.sh SRC [--rounds N] [--threads "1 2"] [--reps N] [--no-avx2] [--out FILE]
#                                   [--prepare]  (build and quantize only)
#
# 1. builds ik_llama.cpp twice into build-ik/ (ignored by git): native (GGML_NATIVE=ON) and
#    AVX2-only (AVX2+FMA+F16C, no AVX-512), ccache where present, flash attention for F16/Q8_0
#    caches only (GGML_IQK_FA_ALL_QUANTS=OFF; the runs use F16 caches): about 40 minutes each on
#    2 cores;
# 2. writes a random-weight F16 GGUF at Llama-3.2-1B's shape with a tied head
#    (tools/gen_random_gguf.py --float f16, SmolLM2's tokenizer), which `nvfp4 convert` turns into
#    our NVFP4 file and ik's llama-quantize into IQ4_XS_R8, Q4_0_R8, IQ4_KS and IQ4_XS;
# 3. runs N interleaved rounds (default 2): for each ISA (native; avx2: ours with NVFP4_ISA=avx2
#    beside ik's AVX2 build) and thread count, `nvfp4 bench model` (prompt 512 then 64 generated;
#    and 64 generated from an empty context) beside `llama-bench -p 512 -n 64 -gp 512,64` on every
#    ik type, each with --reps/-r repeats;
# 4. prints the table (medians over rounds of each tool's own median/mean; min-max over rounds in
#    brackets) and writes every raw record to --out (JSON lines; default
#    build-ik/bench-vs-ik-<date>.jsonl).
# Needs: cmake, ninja, a C++ compiler, python3 with numpy and gguf ($PYTHON, .pyvenv or .venv) for
# the F16 source, and build/nvfp4 (the README's build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
[ $# -ge 1 ] || { usage >&2; exit 2; }
case "$1" in -h|--help) usage; exit 0 ;; esac
src=$(cd "$1" && pwd) || { echo "bench-vs-ik: $1: no such directory" >&2; exit 2; }
shift
rounds=2 threads="1 2" reps=3 avx2=1 out="" prepare=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --no-avx2) avx2=0; shift ;;
    --prepare) prepare=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench-vs-ik: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -f "$src/examples/llama-bench/llama-bench.cpp" ] && [ -d "$src/ggml/src/iqk" ] ||
  { echo "bench-vs-ik: $src is not an ik_llama.cpp source tree (no examples/llama-bench, ggml/src/iqk)" >&2; exit 2; }
nvfp4="$root/build/nvfp4"
[ -x "$nvfp4" ] || { echo "bench-vs-ik: $nvfp4 missing: build the project first (README)" >&2; exit 2; }
# The first python that has numpy and gguf: $PYTHON, the project's venvs, then python3.
py=""
for p in ${PYTHON:-} "$root/.pyvenv/bin/python" "$root/.venv/bin/python" python3; do
  "$p" -c 'import numpy, gguf' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || { echo "bench-vs-ik: no python with numpy and gguf (set PYTHON=...)" >&2; exit 2; }
ik_commit=$(git -C "$src" rev-parse --short=8 HEAD 2>/dev/null || echo "${IK_COMMIT:-unknown}")
mkdir -p build-ik models/bench
out=${out:-build-ik/bench-vs-ik-$(date -u +%Y-%m-%d).jsonl}

# ---- 1. ik_llama.cpp, native and AVX2-only ----
launch=()
command -v ccache >/dev/null && launch=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Machines whose CPUID lists AMX without the kernel granting its tile state die of SIGILL in
# ggml's AMX paths when -march=native compiles them in (the same guard as setup-bench-peer.sh).
noamx=""
echo 'int main(){}' | ${CXX:-c++} -x c++ -mno-amx-tile - -o /dev/null 2>/dev/null && noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
build_ik() {  # name, cmake flags...
  local dir="build-ik/$1"; shift
  if [ ! -x "$dir/bin/llama-bench" ] || [ "$(cat "$dir/.commit" 2>/dev/null)" != "$ik_commit" ]; then
    echo "bench-vs-ik: building ik_llama.cpp $ik_commit into $dir" >&2
    cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launch[@]}" \
      -DGGML_CUDA=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF \
      -DGGML_IQK_FA_ALL_QUANTS=OFF \
      -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" "$@" > "$dir.cmake.log" 2>&1 ||
      { tail -20 "$dir.cmake.log" >&2; exit 1; }
    cmake --build "$dir" --target llama-bench llama-quantize -j"$(nproc)" > "$dir.build.log" 2>&1 ||
      { tail -30 "$dir.build.log" >&2; exit 1; }
    echo "$ik_commit" > "$dir/.commit"
  fi
}
build_ik native -DGGML_NATIVE=ON
isas=(native)
if [ "$avx2" = 1 ]; then
  build_ik avx2 -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVXVNNI=OFF
  isas+=(avx2)
fi

# ---- 2. the models ----
f16=models/bench/llama-1b-f16.gguf
ours=models/bench/llama-1b-f16-nvfp4.gguf
if [ ! -f "$f16" ]; then
  "$py" tools/gen_random_gguf.py llama-1b "$f16" --float f16 --tokenizer-from "$(bash scripts/model-path.sh)"
fi
[ -f "$ours" ] || "$nvfp4" convert "$f16" "$ours"
types=(IQ4_XS_R8 Q4_0_R8 IQ4_KS IQ4_XS)
for t in "${types[@]}"; do
  f="models/bench/llama-1b-ik-$t.gguf"
  [ -f "$f" ] || build-ik/native/bin/llama-quantize "$f16" "$f" "$t" > "build-ik/quantize-$t.log" 2>&1 ||
    { tail -20 "build-ik/quantize-$t.log" >&2; exit 1; }
done

[ "$prepare" = 0 ] || { echo "bench-vs-ik: built and quantized (--prepare)" >&2; exit 0; }

# ---- 3. interleaved rounds ----
: > "$out"
record() {  # engine, type, isa, threads, round, json
  "$py" -c 'import json,sys; e,t,i,th,r=sys.argv[1:6]; d=json.loads(sys.stdin.read());
print(json.dumps({"engine":e,"type":t,"isa":i,"threads":int(th),"round":int(r),"result":d}))' "$@" >> "$out"
}
for r in $(seq 1 "$rounds"); do
  for isa in "${isas[@]}"; do
    envisa=(); [ "$isa" = avx2 ] && envisa=(NVFP4_ISA=avx2)
    for t in $threads; do
      echo "bench-vs-ik: round $r/$rounds, $isa, $t thread(s)" >&2
      env "${envisa[@]}" "$nvfp4" bench model -m "$ours" -t "$t" --prompt-tokens 512 --gen-tokens 64 \
        --reps "$reps" --json 2>/dev/null | record ours NVFP4 "$isa" "$t" "$r"
      env "${envisa[@]}" "$nvfp4" bench model -m "$ours" -t "$t" --prompt-tokens 1 --gen-tokens 64 \
        --reps "$reps" --json 2>/dev/null | record ours-empty NVFP4 "$isa" "$t" "$r"
      for ty in "${types[@]}"; do
        "build-ik/$isa/bin/llama-bench" -m "models/bench/llama-1b-ik-$ty.gguf" -t "$t" -p 512 -n 64 \
          -gp 512,64 -r "$reps" -o json 2>/dev/null | record ik "$ty" "$isa" "$t" "$r"
      done
    done
  done
done

# ---- 4. the table ----
"$py" - "$out" "$ik_commit" <<'EOF'
import json, statistics, sys, platform
recs = [json.loads(l) for l in open(sys.argv[1])]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
print(f"machine: {cpu}; ik_llama.cpp {sys.argv[2]}; random-weight Llama-3.2-1B shape (tied head)")
def med(xs):
    xs = [x for x in xs if x]
    return (statistics.median(xs), min(xs), max(xs)) if xs else None
def fmt(m):
    return "-" if not m else f"{m[0]:.1f} [{m[1]:.1f}-{m[2]:.1f}]"
isas = sorted({r["isa"] for r in recs}, key=lambda s: s != "native")
ths = sorted({r["threads"] for r in recs})
types = []
for r in recs:
    if r["engine"] == "ik" and r["type"] not in types: types.append(r["type"])
def ours(isa, t, eng, key):
    return med([r["result"].get(key) for r in recs if r["engine"] == eng and r["isa"] == isa and r["threads"] == t])
def ik(isa, t, ty, label):
    xs = []
    for r in recs:
        if r["engine"] == "ik" and r["isa"] == isa and r["threads"] == t and r["type"] == ty:
            xs += [x["avg_ts"] for x in r["result"] if x.get("test") == label]
    return med(xs)
for isa in isas:
    cols = [f"{t} thread{'s' if t > 1 else ''}" for t in ths]
    print(f"\n### {isa} (ours{' with NVFP4_ISA=avx2' if isa == 'avx2' else ''}, ik's {isa} build): tok/s, median [min-max] over rounds\n")
    print("| | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    rows = [("ours, generation after a 512-token prompt", [ours(isa, t, "ours", "gen_tps") for t in ths])]
    for ty in types:
        rows.append((f"ik {ty}, same (tg64@pp512)", [ik(isa, t, ty, "tg64@pp512") for t in ths]))
    rows.append(("ours, generation from an empty context", [ours(isa, t, "ours-empty", "gen_tps") for t in ths]))
    for ty in types:
        rows.append((f"ik {ty}, from an empty context (tg64)", [ik(isa, t, ty, "tg64") for t in ths]))
    rows.append(("ours, prompt 512", [ours(isa, t, "ours", "prompt_tps") for t in ths]))
    for ty in types:
        rows.append((f"ik {ty}, prompt 512 (pp512)", [ik(isa, t, ty, "pp512") for t in ths]))
    rows.append(("DRAM read measured by bench model, GB/s", [ours(isa, t, "ours", "dram_gbps") for t in ths]))
    for name, vals in rows:
        print(f"| {name} | " + " | ".join(fmt(v) for v in vals) + " |")
    print()
    for t in ths:
        def best(label):
            c = [(ik(isa, t, ty, label), ty) for ty in types]
            c = [(m, ty) for m, ty in c if m]
            return max(c, key=lambda x: x[0][0]) if c else (None, None)
        parts = []
        for what, eng, key, label in (("generation after 512", "ours", "gen_tps", "tg64@pp512"),
                                      ("generation from empty", "ours-empty", "gen_tps", "tg64"),
                                      ("prompt 512", "ours", "prompt_tps", "pp512")):
            o = ours(isa, t, eng, key)
            b, ty = best(label)
            if o and b:
                parts.append(f"{what} {o[0] / b[0]:.2f}x ik's best ({ty})")
        print(f"- {t} thread(s): ours / ik: " + "; ".join(parts))
EOF
echo "bench-vs-ik: raw records in $out" >&2

#!/usr/bin/env bash
# Speculative decoding beside plain decoding, side by side in one run: `nvfp4 run --json` on an
# input-grounded task (repeat a given code file with a change) and on free text, REPS times
# each, alternating plain and --spec ngram; prints acceptance, tokens per step, the median and
# range of generation tok/s of each, and the speed-up of the medians. Also checks that the two
# produced the same tokens (they must: speculation is bit-identical in a16q8).
# Usage: bash scripts/bench-spec.sh [MODEL] [REPS=3] [N_PREDICT=128] [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/smollm2-nvfp4.gguf}
reps=${2:-3}
n=${3:-128}
threads=${4:-2}
bin=build/nvfp4
code_prompt="$(head -c 1800 src/runtime/rope.cpp)

Repeat the code above exactly, with the function apply renamed to rotate."
free_prompt="Write a short story about a lighthouse keeper who finds a message in a bottle."
for task in code free; do
  prompt=$code_prompt
  [ "$task" = free ] && prompt=$free_prompt
  for r in $(seq 1 "$reps"); do
    for mode in plain spec; do
      extra=()
      [ "$mode" = spec ] && extra=(--spec ngram)
      "$bin" run -m "$model" --chat -p "$prompt" -n "$n" -t "$threads" --json "${extra[@]}" 2>/dev/null |
        python3 -c "import json,sys; j=json.load(sys.stdin); s=j.get('speculative') or {}; print('$task', '$mode', j['gen_tps'], s.get('acceptance', 0), s.get('tokens_per_step', 1), ','.join(map(str, j['ids'])))"
    done
  done
done | python3 -c "
import sys, statistics
rows = [l.split() for l in sys.stdin if l.strip()]
for task in ('code', 'free'):
    ids = {m: {r[5] for r in rows if r[0] == task and r[1] == m} for m in ('plain', 'spec')}
    same = ids['plain'] == ids['spec'] and len(ids['plain']) == 1
    t = {m: [float(r[2]) for r in rows if r[0] == task and r[1] == m] for m in ('plain', 'spec')}
    acc = [float(r[3]) for r in rows if r[0] == task and r[1] == 'spec']
    tps = [float(r[4]) for r in rows if r[0] == task and r[1] == 'spec']
    mp, ms = statistics.median(t['plain']), statistics.median(t['spec'])
    print(f'{task:5s} plain {mp:7.1f} tok/s ({min(t[\"plain\"]):.1f}-{max(t[\"plain\"]):.1f})  spec {ms:7.1f} tok/s '
          f'({min(t[\"spec\"]):.1f}-{max(t[\"spec\"]):.1f})  speed-up {ms / mp:.2f}x  acceptance {statistics.median(acc):.2f}  '
          f'tokens/step {statistics.median(tps):.2f}  same tokens: {\"yes\" if same else \"NO\"}')
"

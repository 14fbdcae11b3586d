#!/usr/bin/env bash
# Speculative decoding beside plain decoding, ours and llama.cpp's, in one run on the same GGUF
# and the same prompt ids. Tasks: code (repeat a given code file with a rename: lookup pays),
# quote (answer with quotes from a given text: lookup pays) and free text. Each repeat runs, in
# turn: `nvfp4 run --json` plain, --spec ngram (and --spec draft with DRAFT), then PyPI
# llama-cpp-python plain and with its prompt-lookup decoding (LlamaPromptLookupDecoding,
# tools/llama_cpp_spec_bench.py; skipped when build-peer/venv lacks llama_cpp: see
# scripts/setup-bench-peer.sh). Prints, per task and engine, the median and range of generation
# tok/s, the speed-up of the medians, acceptance and tokens per step, and checks that our
# speculative tokens equal our plain tokens (they must: exit 1 otherwise). llama.cpp's lookup
# tokens are compared with its plain tokens too, and reported.
# Usage: bash scripts/bench-spec.sh [MODEL] [REPS=3] [N_PREDICT=128] [THREADS=2] [DRAFT]
# MODEL defaults to models/smollm2-135m-instruct-nvfp4.gguf (converted from the bundled SmolLM2
# when missing); DRAFT: a draft model with MODEL's vocabulary (e.g. the same file).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/smollm2-135m-instruct-nvfp4.gguf}
reps=${2:-3}
n=${3:-128}
threads=${4:-2}
draft=${5:-}
bin=build/nvfp4
if [ ! -f "$model" ] && [ "$model" = models/smollm2-135m-instruct-nvfp4.gguf ]; then
  mkdir -p models
  "$bin" convert "$(bash scripts/model-path.sh)" "$model" --verify >&2
fi
peer=build-peer/venv/bin/python
have_peer=0
if [ -x "$peer" ] && "$peer" -c "import llama_cpp" 2>/dev/null; then
  have_peer=1
else
  echo "bench-spec: no llama.cpp peer (run scripts/setup-bench-peer.sh); its rows are skipped" >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
code_prompt="$(head -c 1800 src/ops/rope.cpp)

Repeat the code above exactly, with the function apply renamed to rotate."
quote_prompt="It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of
foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it
was the season of Darkness, it was the spring of hope, it was the winter of despair, we had everything
before us, we had nothing before us, we were all going direct to Heaven, we were all going direct the
other way.

Quote, word for word, every part of the text above that talks about seasons or hope."
free_prompt="Write a short story about a lighthouse keeper who finds a message in a bottle."
ours() {  # task, mode, extra run arguments
  local task=$1 mode=$2; shift 2
  "$bin" run -m "$model" -f "$work/$task.txt" --chat -n "$n" -t "$threads" --json "$@" 2>/dev/null |
    python3 -c "
import json, sys
j = json.load(sys.stdin); s = j.get('speculative') or {}
open('$work/$task.ids', 'w').write(','.join(map(str, j['prompt_ids'])))
print('$task', 'nvfp4', '$mode', j['gen_tps'], s.get('acceptance', 0), s.get('tokens_per_step', 1), ','.join(map(str, j['ids'])) or '-')"
}
for task in code quote free; do
  var="${task}_prompt"
  printf '%s' "${!var}" > "$work/$task.txt"
  for r in $(seq 1 "$reps"); do
    ours "$task" plain
    ours "$task" ngram --spec ngram
    [ -n "$draft" ] && ours "$task" draft --spec draft --model-draft "$draft"
    if [ "$have_peer" = 1 ]; then
      "$peer" tools/llama_cpp_spec_bench.py "$model" --ids "$(cat "$work/$task.ids")" --n "$n" --threads "$threads" 2>/dev/null |
        python3 -c "
import json, sys
for l in sys.stdin:
    j = json.loads(l)
    if 'error' in j: sys.exit('bench-spec: llama.cpp: ' + j['error'])
    print('$task', 'llama.cpp', j['mode'], j['gen_tps'], 0, 0, ','.join(map(str, j['ids'])) or '-')" ||
        echo "bench-spec: llama.cpp failed on $task (its rows are missing)" >&2
    fi
  done
done | tee "$work/rows.txt" >&2
echo "bench-spec: $model, $reps repeats, $n tokens, $threads threads$([ -n "$draft" ] && echo ", draft $draft")"
python3 - "$work/rows.txt" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
bad = False
for task in ('code', 'quote', 'free'):
    for eng in ('nvfp4', 'llama.cpp'):
        sel = [r for r in rows if r[0] == task and r[1] == eng]
        if not sel:
            continue
        tps = {}
        for r in sel:
            tps.setdefault(r[2], []).append(float(r[3]))
        plain_ids = {r[6] for r in sel if r[2] == 'plain'}
        mp = statistics.median(tps['plain'])
        print(f'{task:5s} {eng:9s} plain  {mp:7.1f} tok/s ({min(tps["plain"]):.1f}-{max(tps["plain"]):.1f})')
        for mode in [m for m in tps if m != 'plain']:
            ms = statistics.median(tps[mode])
            ids = {r[6] for r in sel if r[2] == mode}
            same = ids == plain_ids and len(ids) == 1
            extra = ''
            if eng == 'nvfp4':
                acc = statistics.median(float(r[4]) for r in sel if r[2] == mode)
                tpstep = statistics.median(float(r[5]) for r in sel if r[2] == mode)
                extra = f'  acceptance {acc:.2f}  tokens/step {tpstep:.2f}'
                bad = bad or not same
            print(f'{task:5s} {eng:9s} {mode:6s} {ms:7.1f} tok/s ({min(tps[mode]):.1f}-{max(tps[mode]):.1f})  '
                  f'speed-up {ms / mp:.2f}x{extra}  same tokens as plain: {"yes" if same else "NO"}')
    ours = {r[6] for r in rows if r[0] == task and r[1] == 'nvfp4' and r[2] == 'plain'}
    peer = {r[6] for r in rows if r[0] == task and r[1] == 'llama.cpp' and r[2] == 'plain'}
    if ours and peer:
        a, b = next(iter(ours)).split(','), next(iter(peer)).split(',')
        k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        print(f'{task:5s} plain tokens, nvfp4 vs llama.cpp: the first {k} of {len(a)}/{len(b)} agree')
if bad:
    sys.exit('bench-spec: our speculative tokens differ from our plain tokens')
EOF

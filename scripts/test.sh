#!/usr/bin/env bash
# The test command: installs what is missing, builds a Release tree (g++) and a sanitizer tree
# (clang, ASan + UBSan, with the libFuzzer targets), fuzzes the checkpoint parsers for a bounded
# time (NVFP4_FUZZ_SECONDS per target, default 20), then runs every test in both trees with CTest,
# and `nvfp4 serve` against PyPI's openai and anthropic clients (tools/test_serve_openai.py, tools/test_serve_tools.py,
# tools/test_serve_agents.py, tools/test_serve_structured.py, tools/test_serve_load.py,
# tools/test_serve_nginx.py; structured output validated by PyPI's jsonschema and lark,
# tools/test_serve_grammar.py; embeddings, tools/test_serve_embeddings.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
NVFP4_SMOLLM2_GGUF="$(bash scripts/model-path.sh)"
export NVFP4_SMOLLM2_GGUF
# ccache where the machine has it (its cache outlives a clean clone): the same sources build once.
launch=()
# CI clones into a new folder each time: paths are hashed relative to the checkout (CCACHE_BASEDIR)
# and the -g tree's working directory is left out of the hash, so a clone elsewhere hits the cache.
if command -v ccache >/dev/null; then
  launch=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launch[@]}" >/dev/null
cmake --build build -j "$jobs"
# A build-asan/ left by an older g++ configuration cannot switch compilers: start it afresh.
if [ -f build-asan/CMakeCache.txt ] && ! grep -qE '^CMAKE_CXX_COMPILER:[A-Z]+=.*clang\+\+' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNVFP4_SANITIZE=ON -DNVFP4_FUZZ=ON "${launch[@]}" >/dev/null
cmake --build build-asan -j "$jobs"
echo "== Fuzzing the checkpoint parsers (libFuzzer, bounded)"
NVFP4_FUZZ_BUILD_DIR=build-asan bash scripts/fuzz.sh "${NVFP4_FUZZ_SECONDS:-20}"
echo "== Release tests"
ctest --test-dir build --output-on-failure -j "$jobs"
echo "== Layers: include and link graphs (tools/layer_graph.py)"
python3 tools/layer_graph.py build
echo "== Kernel ISAs exercised by the tests on this machine"
bash scripts/isa-summary.sh build | tee build/isa-summary.txt
echo "== nvfp4 serve against PyPI's openai client (loopback, bounded)"
if [ ! -x build/serve-venv/bin/python ] || ! build/serve-venv/bin/python -c "import openai, anthropic, jsonschema, lark" 2>/dev/null; then
  rm -rf build/serve-venv
  python3 -m venv build/serve-venv
  build/serve-venv/bin/pip install -q "openai>=1.0" "anthropic>=0.40" "jsonschema>=4" "lark>=1.1"
fi
build/serve-venv/bin/python tools/test_serve_openai.py build/nvfp4 "$NVFP4_SMOLLM2_GGUF" --quantize
echo "== nvfp4 serve with tools and reasoning against PyPI's openai client"
build/serve-venv/bin/python tools/test_serve_tools.py build/nvfp4 "$NVFP4_SMOLLM2_GGUF" --quantize
echo "== nvfp4 serve's Responses and Messages APIs against PyPI's openai and anthropic clients"
build/serve-venv/bin/python tools/test_serve_agents.py build/nvfp4 "$NVFP4_SMOLLM2_GGUF" --quantize
echo "== nvfp4 serve's structured output (response_format, tool_choice) against PyPI's openai and jsonschema"
build/serve-venv/bin/python tools/test_serve_structured.py build/nvfp4 "$NVFP4_SMOLLM2_GGUF" --quantize
# (The first 100 of the corpus's 200 schemas here, to keep CI within its time: the whole corpus,
# about 2.5 minutes on 2 cores, is the same command without --schemas.)
echo "== nvfp4 serve's structured output over 100 schemas and 10 GBNF grammars (PyPI jsonschema and lark)"
build/serve-venv/bin/python tools/test_serve_grammar.py build/nvfp4 "$NVFP4_SMOLLM2_GGUF" --quantize --schemas 100
echo "== nvfp4 serve's /v1/embeddings against PyPI's openai client"
build/serve-venv/bin/python tools/test_serve_embeddings.py build/nvfp4 "$NVFP4_SMOLLM2_GGUF" --quantize
echo "== nvfp4 serve under load: 200 requests at concurrency 8, each equal to itself alone"
build/serve-venv/bin/python tools/test_serve_load.py build/nvfp4 "$NVFP4_SMOLLM2_GGUF" --quantize
echo "== nvfp4 serve --spec mtp (the trained SmolLM2 head) under load: 100 requests, each equal to itself alone"
build/serve-venv/bin/python tools/test_serve_load.py build/nvfp4 "$NVFP4_SMOLLM2_GGUF" --quantize --requests 100 \
  --mtp fixtures/mtp/smollm2_mtp.gguf --draft-max 3 --spec-min-speedup 0
echo "== nvfp4 serve: two replicas behind nginx (docs/SCALING.md)"
build/serve-venv/bin/python tools/test_serve_nginx.py build/nvfp4 "$NVFP4_SMOLLM2_GGUF" --quantize
echo "== ASan+UBSan tests"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
echo "== Summary: all passed; the kernel tests ran on this machine's ISAs as follows"
cat build/isa-summary.txt

#!/usr/bin/env bash
# Builds the llama.cpp/ggml peers of `nvfp4 bench kernels` and `nvfp4 bench model` into build-peer/
# (ignored by git):
#  1. downloads the llama-cpp-python sdist from PyPI (it vendors llama.cpp and ggml),
#  2. builds its native library the way its wheel ships it (libllama + ggml, shared, native CPU,
#     OpenMP), but only those targets: pip's own build of the sdist also builds the tools and mtmd,
#     which takes over 50 minutes on 2 cores,
#  3. installs the package's Python code with that library into build-peer/venv (what the wheel
#     holds: llama_cpp/ plus llama_cpp/lib/*.so), so `build-peer/venv/bin/python -c "import
#     llama_cpp"` is PyPI's llama-cpp-python,
#  4. compiles tools/bench-peer/nvfp4_peer_bench.cpp against the same ggml.
# llama.cpp's code is never copied into this repository.
# Usage: bash scripts/setup-bench-peer.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out="$root/build-peer"
py=${1:-python3}
mkdir -p "$out/src"
if [ ! -x "$out/venv/bin/python" ] || ! "$out/venv/bin/python" -m pip --version >/dev/null 2>&1; then
  rm -rf "$out/venv"
  "$py" -m venv "$out/venv"
fi
vpy="$out/venv/bin/python"
if ! ls "$out"/src/llama_cpp_python-*.tar.gz >/dev/null 2>&1; then
  # The sdist's metadata step needs scikit-build-core; --no-build-isolation keeps pip from
  # building the whole build toolchain from source.
  "$vpy" -m pip install -q scikit-build-core
  "$vpy" -m pip download --no-deps --no-binary llama-cpp-python --no-build-isolation \
    llama-cpp-python -d "$out/src"
fi
sdist=$(ls "$out"/src/llama_cpp_python-*.tar.gz | head -1)
rm -rf "$out/llama-src" && mkdir -p "$out/llama-src"
tar xzf "$sdist" -C "$out/llama-src" --strip-components=1
lcpp="$out/llama-src/vendor/llama.cpp"
grep -q "GGML_TYPE_NVFP4" "$lcpp/ggml/include/ggml.h" || { echo "this llama.cpp has no NVFP4 type" >&2; exit 1; }
# -mno-amx-*: machines whose CPUID lists AMX without the kernel granting its tile state (this
# project's VMs) die of SIGILL in ggml's AMX Q4_0 path; -march=native would compile it in.
noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
cmake -S "$lcpp" -B "$out/llama" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" \
  -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_COMMON=OFF >/dev/null
cmake --build "$out/llama" -j "$(nproc)" --target llama ggml ggml-base ggml-cpu
# The Python package as the wheel lays it out.
"$vpy" -m pip install -q "typing-extensions>=4.5.0" "numpy>=1.20.0" "diskcache>=5.6.1" "jinja2>=2.11.3"
site=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -rf "$site/llama_cpp"
cp -r "$out/llama-src/llama_cpp" "$site/llama_cpp"
mkdir -p "$site/llama_cpp/lib"
find "$out/llama" -name 'lib*.so*' -exec cp -P {} "$site/llama_cpp/lib/" \;
"$vpy" -c 'import llama_cpp; print("llama_cpp", llama_cpp.__version__, "from", llama_cpp.__file__)'
libdir=$(dirname "$(find "$out/llama" -name 'libggml-base.so' | head -1)")
g++ -O2 -std=c++17 -I "$lcpp/ggml/include" tools/bench-peer/nvfp4_peer_bench.cpp \
  -L"$libdir" -Wl,-rpath,"$site/llama_cpp/lib" -lggml -lggml-cpu -lggml-base -fopenmp -lpthread -ldl \
  -o "$out/nvfp4-peer-bench"
echo "ggml peer: $out/nvfp4-peer-bench; llama.cpp peer: $vpy ($(basename "$sdist"))"

#!/usr/bin/env bash
# Reproduces third_party/xgrammar/ from the pinned PyPI sdist of xgrammar (Apache-2.0): the C++
# core only (cpp/ without the Python bindings in cpp/tvm_ffi, include/, the two header-only
# dependencies it includes: picojson and DLPack's dlpack.h), with the licenses. No tests, Python,
# docs or web sources. The sdist's sha256 is checked before anything is unpacked.
#
#   bash tools/vendor_xgrammar.sh [SDIST.tar.gz]
#
# Without an argument the sdist is fetched with `pip download --no-binary :all: --no-deps`.
# Then our fixes in tools/xgrammar-patches/*.patch are applied in order (each says what it fixes
# and how it was found); VERSION lists them.
set -euo pipefail
VERSION=0.2.8
SHA256=8305646fd2b319d6c3003f51a1665e54cbbe9cba1fb636bc41d0b46434ccbb80
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/third_party/xgrammar
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ $# -ge 1 ]]; then
  sdist=$1
else
  python3 -m pip download --no-binary :all: --no-deps --no-build-isolation "xgrammar==$VERSION" -d "$tmp" >&2 ||
    python3 -m pip download --no-binary :all: --no-deps "xgrammar==$VERSION" -d "$tmp" >&2
  sdist=$tmp/xgrammar-$VERSION.tar.gz
fi
echo "$SHA256  $sdist" | sha256sum -c - >&2
tar -xzf "$sdist" -C "$tmp"
src=$tmp/xgrammar-$VERSION
rm -rf "$dest"
mkdir -p "$dest/3rdparty/picojson" "$dest/3rdparty/dlpack/include/dlpack"
cp "$src/LICENSE" "$src/NOTICE" "$dest/"
cp -r "$src/include" "$dest/include"
cp -r "$src/cpp" "$dest/cpp"
rm -rf "$dest/cpp/tvm_ffi" "$dest/cpp/CMakeLists.txt"
cp "$src/3rdparty/picojson/picojson.h" "$dest/3rdparty/picojson/"
cp "$src/3rdparty/dlpack/include/dlpack/dlpack.h" "$dest/3rdparty/dlpack/include/dlpack/"
cp "$src/3rdparty/dlpack/LICENSE" "$dest/3rdparty/dlpack/LICENSE"
patches=()
for p in "$root"/tools/xgrammar-patches/*.patch; do
  [[ -e $p ]] || continue
  patch -s -p1 -d "$dest" < "$p"
  patches+=("$(basename "$p")")
done
cat > "$dest/VERSION" <<EOV
xgrammar $VERSION from the PyPI sdist xgrammar-$VERSION.tar.gz (sha256 $SHA256),
reproduced by tools/vendor_xgrammar.sh. picojson (BSD-2-Clause, its license is in picojson.h)
and DLPack (Apache-2.0) are the sdist's own copies under 3rdparty/.
Patched with tools/xgrammar-patches/: ${patches[*]:-none}
EOV
echo "vendored xgrammar $VERSION into $dest" >&2

#!/usr/bin/env python3
"""Writes fixtures/codec/: what ml_dtypes (and numpy, for float16) make of our codecs' inputs.

Run with the tools venv (numpy, ml_dtypes):
    /work/tools-venv/v/bin/python tools/gen_codec_fixtures.py [--out fixtures/codec]

The oracles: ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn, numpy.float16, ml_dtypes.bfloat16.
tests/test_codec_mldtypes.cpp compares our codec.h with these files byte for byte.

File format: every file is a raw little-endian array with no header; the suffix names the element
type (.f32 = IEEE float32, .u8 = uint8, .u16 = uint16). manifest.txt has one line per array,
`name count fnv1a64-of-its-bytes`, and the test checks both before it compares anything.

  <c>_decode.f32          the oracle's float32 value of every code: e2m1 16, e4m3 256, half and
                          bf16 65536 (index = the code's bits)
  <c>_enc_in.f32          encoder inputs (committed as they are): e2m1 and e4m3 carry their whole
                          midpoint sweep here; half and bf16 only their specials and random values
  <c>_enc_out.u8|.u16     the oracle's encoding of each input, in the same order
  half_sweep_out.u16      the oracle's encoding of the half sweep inputs (inputs are not committed:
  bf16_sweep_out.u16      they follow the rule below; manifest line `<c>_sweep_in` has the fnv1a64
                          of the float32 inputs, so the test proves it rebuilt the same ones)

Midpoint sweep, for every pair of adjacent non-negative finite values (a, b) of the format, and for
the largest finite value with b = the next step the format lacks (E2M1 8, E4M3 480, half 65536,
bf16 2^128): four float32 inputs a, nextafter(m, a), m, nextafter(m, b) where m = (a + b) / 2 is
exact in float32. All positive inputs first, then the same list negated (sign bit flipped).
For half, a and b come from half_decode.f32 (h = 0..0x7BFF, b = decode[h+1] or 65536); for bf16
they are bit patterns: a = h << 16, m = a + 0x8000, neighbours m - 1 and m + 1 (h = 0..0x7F7F).
"""
import argparse
import pathlib
import warnings

import ml_dtypes
import numpy as np

E2M1 = ml_dtypes.float4_e2m1fn
E4M3 = ml_dtypes.float8_e4m3fn
BF16 = ml_dtypes.bfloat16


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def f32(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def sweep(values: np.ndarray, top_next: float) -> np.ndarray:
    """a, below-mid, mid, above-mid for every adjacent pair of sorted non-negative values."""
    vals = [float(v) for v in values]
    nexts = vals[1:] + [top_next]
    out = []
    for a, b in zip(vals, nexts):
        m = np.float32((a + b) / 2)
        assert float(m) == (a + b) / 2
        out += [np.float32(a), np.nextafter(m, np.float32(a)), m, np.nextafter(m, np.float32(b))]
    pos = np.array(out, dtype=np.float32)
    return np.concatenate([pos, -pos])


def specials() -> np.ndarray:
    s = f32([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
             0x7F800001, 0xFF800001, 0x7FA00000, 0x7FC02000, 0x7F7FFFFF, 0xFF7FFFFF,
             0x00800000, 0x80800000, 0x00000001, 0x80000001, 0x007FFFFF])
    return s


def random_bits(rng, n, exp_lo, exp_hi):
    """n float32 with uniformly random sign and mantissa, biased exponent in [exp_lo, exp_hi]."""
    sign = rng.integers(0, 2, n, dtype=np.uint32) << 31
    exp = rng.integers(exp_lo, exp_hi + 1, n, dtype=np.uint32) << 23
    man = rng.integers(0, 1 << 23, n, dtype=np.uint32)
    return (sign | exp | man).view(np.float32)


def encode(x: np.ndarray, dtype) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            y = x.astype(dtype)
    return y.view(np.uint8 if y.itemsize == 1 else np.uint16)


def decode(n_codes: int, dtype) -> np.ndarray:
    codes = np.arange(n_codes, dtype=np.uint8 if n_codes <= 256 else np.uint16)
    if dtype is E2M1:
        return codes.view(E2M1).astype(np.float32)  # ml_dtypes stores one code per byte
    return codes.view(dtype).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent.parent / "fixtures/codec"))
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261130)
    manifest = []

    def put(name, arr):
        arr = np.ascontiguousarray(arr)
        (out / name).write_bytes(arr.tobytes())
        manifest.append((name.rsplit(".", 1)[0], arr.size, fnv1a64(arr.tobytes())))

    # ---- decode tables -----------------------------------------------------------------------
    dec = {"e2m1": decode(16, E2M1), "e4m3": decode(256, E4M3),
           "half": decode(65536, np.float16), "bf16": decode(65536, BF16)}
    for name, table in dec.items():
        put(f"{name}_decode.f32", table)

    # ---- E2M1: whole sweep, a dense uniform grid, random values, specials ----------------------
    e2m1_pos = dec["e2m1"][:8]
    grid = np.arange(0, 8 * 64 + 1, dtype=np.float32) / np.float32(64)  # every 1/64 in [0, 8]
    e2m1_in = np.concatenate([
        sweep(e2m1_pos, 8.0), grid, -grid,
        (rng.random(4096, dtype=np.float32) * 16 - 8).astype(np.float32),
        random_bits(rng, 2048, 127 - 30, 127 + 30), specials()])
    put("e2m1_enc_in.f32", e2m1_in)
    put("e2m1_enc_out.u8", encode(e2m1_in, E2M1))

    # ---- E4M3: sweep over its 127 non-negative finite values, random in [2^-12, 2^10) ---------
    e4m3_pos = dec["e4m3"][:0x7F]
    e4m3_in = np.concatenate([
        sweep(e4m3_pos, 480.0), random_bits(rng, 8192, 127 - 12, 127 + 9),
        random_bits(rng, 1024, 1, 254), specials(),
        np.array([1e9, -1e9, 2.0**-10, 2.0**-11, 3 * 2.0**-11], dtype=np.float32)])
    put("e4m3_enc_in.f32", e4m3_in)
    put("e4m3_enc_out.u8", encode(e4m3_in, E4M3))

    # ---- float16 (numpy): sweep by rule, random over its whole range and past it -------------
    half_sweep = sweep(dec["half"][:0x7C00], 65536.0)
    manifest.append(("half_sweep_in", half_sweep.size, fnv1a64(half_sweep.tobytes())))
    put("half_sweep_out.u16", encode(half_sweep, np.float16))
    half_in = np.concatenate([random_bits(rng, 8192, 127 - 26, 127 + 17),
                              random_bits(rng, 1024, 1, 254), specials()])
    put("half_enc_in.f32", half_in)
    put("half_enc_out.u16", encode(half_in, np.float16))

    # ---- bfloat16 (ml_dtypes): sweep by bit rule, random float32 bit patterns ----------------
    h = np.arange(0x7F80, dtype=np.uint32)
    m = (h << 16) + 0x8000
    pos = np.stack([h << 16, m - 1, m, m + 1], axis=1).reshape(-1)
    bf16_sweep = np.concatenate([pos, pos | 0x80000000]).view(np.float32)
    manifest.append(("bf16_sweep_in", bf16_sweep.size, fnv1a64(bf16_sweep.tobytes())))
    put("bf16_sweep_out.u16", encode(bf16_sweep, BF16))
    bf16_in = np.concatenate([rng.integers(0, 1 << 32, 8192, dtype=np.uint32).view(np.float32),
                              specials()])
    put("bf16_enc_in.f32", bf16_in)
    put("bf16_enc_out.u16", encode(bf16_in, BF16))

    with open(out / "manifest.txt", "w") as f:
        f.write(f"# written by tools/gen_codec_fixtures.py; ml_dtypes {ml_dtypes.__version__}, "
                f"numpy {np.__version__}\n# name count fnv1a64\n")
        for name, count, h64 in manifest:
            f.write(f"{name} {count} {h64:016x}\n")
    total = sum(p.stat().st_size for p in out.iterdir())
    print(f"wrote {len(manifest)} arrays to {out} ({total} bytes)")


if __name__ == "__main__":
    main()

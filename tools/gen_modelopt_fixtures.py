#!/usr/bin/env python3
"""Writes fixtures/modelopt/: NVIDIA ModelOpt's NVFP4 quantization of reproducible test tensors.

Run with the tools venv (torch on CPU, nvidia-modelopt, ml_dtypes):
    /work/tools-venv/v/bin/python tools/gen_modelopt_fixtures.py [--out fixtures/modelopt]

The oracle is modelopt.torch.quantization.qtensor.NVFP4QTensor.quantize(w, 16), called as
ModelOpt's export does for a weight whose quantizer holds the weight's own amax (dynamic path):
it returns the packed uint8 codes (element 2k in the low nibble), float8_e4m3fn per-block scales
and the float32 weights_scaling_factor_2. tests/test_modelopt_fixtures.cpp rebuilds every input
tensor from the recipe below, checks the FNV-1a 64 hash of its float32 bytes against this file,
then compares our quantize() byte for byte.

Inputs are not committed; they come from splitmix64 (tests/test_util.h: Rng::next) with integer
arithmetic and exact float steps only (ldexp of integers, bit casts, products with at most 24
significant bits), so C++ rebuilds them bit for bit. Calls to next() are consumed in flat order,
a fixed number per element or per 16-value block:
  gauss e        per element 4 calls c: g = sum(int(c >> 42) - 2^21) (|g| < 2^23); w = g * 2^e
  outlier e k    per element 4 gauss calls, then c: if c & 255 == 0: w *= 2^(4 + (c >> 8) % k)
  range lo hi    per block c: x = lo + (c >> 8) % (hi - lo + 1), zero block if c & 7 == 0;
                 then per element 4 gauss calls: w = g * 2^(x - 23) (or +0)
  zeros e        per block c: mode = c & 3, pos = (c >> 8) % 16, neg = (c >> 16) & 1; then per
                 element 4 gauss calls; mode 0: all zero, mode 1: only element pos is g * 2^e,
                 else all g * 2^e; the zeros are -0.0 when neg
  bits lo hi     per element c: bits = lo + (c >> 1) % (hi - lo + 1), sign bit = c & 1
  ties j         scale2 is exactly 2^j and every block's scale exact, so values sit exactly on
                 the E2M1 rounding bounds. Per block 18 calls c0..c17. Block 0 of the tensor:
                 S = 448 (so amax = 2688 * 2^j). Else if c0 % 4 == 0: i = 1 + (c0 >> 2) % 125,
                 S = the midpoint of E4M3 bytes i and i+1 (a tie for the scale rounding),
                 unit = the even byte of the two; else the byte b = 1 + (c0 >> 2) % 126, S =
                 unit = e4m3(b). Element p = c1 % 16 is (-1)^((c1 >> 4) & 1) * 6 * S * 2^j (the
                 block amax). Element i != p uses c = c(2+i): t = [0.25, 0.75, 1.25, 1.75, 2.5,
                 3.5, 5][c % 7], x = t * e4m3(unit) * 2^j; (c >> 8) % 4 == 2: nextafter(x, 0),
                 == 3: nextafter(x, inf); negated if (c >> 16) & 1.

Files:
  cases.txt     one line per tensor: name kind seed n_out n_in p1 p2 input_fnv64 scale2_bits
                expect sub_blocks given_s2. expect: `match` (ours must equal ModelOpt), `spec_zero` (all
                zero tensor: SPEC section 4 departs from ModelOpt), `refuse` (amax > 0 but
                amax / 2688 underflows to 0: we refuse; ModelOpt writes garbage). sub_blocks =
                how many of ModelOpt's block scales are E4M3 subnormal (byte < 0x08).
                given_s2: `-`, or the float32 bits of a scale2 passed in (ModelOpt's
                weights_scaling_factor_2 argument; ours: quantize_with_scale2), as w4a4
                activations are quantized with a calibrated input_scale.
  outputs.bin   for each case in order: ModelOpt's codes (n_out * n_in / 2 bytes, row layout),
                then its scale bytes (n_out * n_in / 16). Its hash is on the `#outputs` line.
"""
import argparse
import pathlib

import ml_dtypes
import numpy as np
import torch

from modelopt.torch.quantization.qtensor import NVFP4QTensor

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
E4M3 = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
TIES = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], dtype=np.float32)

# name, kind, seed, n_out, n_in, p1, p2
CASES = [
    ("gauss_n16", "gauss", 101, 2048, 16, -27, 0),
    ("gauss_n64", "gauss", 102, 1024, 64, -27, 0),
    ("gauss_n576", "gauss", 103, 256, 576, -27, 0),
    ("gauss_n1536", "gauss", 104, 160, 1536, -27, 0),
    ("outlier_n1536", "outlier", 105, 256, 1536, -27, 12),
    ("outlier_n576", "outlier", 106, 128, 576, -27, 16),
    ("range_wide", "range", 107, 96, 1536, -100, 100),
    ("range_tiny", "range", 108, 64, 576, -103, -90),
    ("range_huge", "range", 109, 64, 576, 90, 127),
    ("range_narrow", "range", 110, 128, 576, -8, 0),
    ("ties_j0", "ties", 111, 512, 256, 0, 0),
    ("ties_jm20", "ties", 112, 256, 576, -20, 0),
    ("ties_j25", "ties", 113, 128, 1536, 25, 0),
    ("ties_jm100", "ties", 114, 64, 64, -100, 0),
    ("ties_j90", "ties", 115, 64, 64, 90, 0),
    ("zeros_n576", "zeros", 116, 256, 576, -27, 0),
    ("zeros_n64", "zeros", 117, 256, 64, -27, 0),
    ("subnormal_f32", "bits", 118, 64, 64, 1, 0x007FFFFF),
    ("tiny_f32", "bits", 119, 64, 64, 1, 0x03FFFFFF),
    ("near_flt_max", "bits", 120, 64, 64, 0x7E000000, 0x7F7FFFFF),
    ("whole_f32_range", "bits", 121, 64, 576, 0, 0x7F7FFFFF),
    ("scale2_denormal", "bits", 122, 4, 64, 0, 0x1000),
    ("all_zero", "bits", 123, 4, 64, 0, 0),
    ("scale2_underflow", "bits", 124, 4, 64, 0, 0x3FF),
    # The activation path of w4a4 (scale2 := a calibrated input_scale, given, not amax / 2688):
    # blocks whose scale clamps at 448 and values that saturate at 6, or scales clamped at 2^-9.
    ("given_s2_clamp", "gauss", 125, 128, 576, -27, 0, 0x35800000),        # 2^-20
    ("given_s2_outlier", "outlier", 126, 64, 1536, -27, 12, 0x391055D2),   # 0.37 / 2688
    ("given_s2_large", "gauss", 127, 128, 64, -27, 0, 0x3F800000),         # 1.0
]


def stream(seed: int, n: int) -> np.ndarray:
    """The first n outputs of splitmix64(seed), as tests/test_util.h's Rng::next()."""
    with np.errstate(over="ignore"):
        k = np.arange(1, n + 1, dtype=np.uint64)
        z = np.uint64(seed) + k * np.uint64(GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def gauss_int(c: np.ndarray) -> np.ndarray:
    """c: [..., 4] calls -> exact integer sum of four 22-bit centred uniforms."""
    u = (c >> np.uint64(42)).astype(np.int64) - (1 << 21)
    return u.sum(axis=-1)


def ldexp32(g: np.ndarray, e) -> np.ndarray:
    out = np.ldexp(g.astype(np.float64), e).astype(np.float32)
    assert np.array_equal(out.astype(np.float64), np.ldexp(g.astype(np.float64), e)), "inexact"
    return out


def make_input(kind, seed, n_out, n_in, p1, p2) -> np.ndarray:
    n = n_out * n_in
    nb = n // 16
    if kind == "gauss":
        w = ldexp32(gauss_int(stream(seed, 4 * n).reshape(n, 4)), p1)
    elif kind == "outlier":
        c = stream(seed, 5 * n).reshape(n, 5)
        w = ldexp32(gauss_int(c[:, :4]), p1)
        hit = (c[:, 4] & np.uint64(255)) == 0
        shift = 4 + ((c[:, 4] >> np.uint64(8)) % np.uint64(p2)).astype(np.int64)
        w = np.where(hit, ldexp32(w, np.where(hit, shift, 0)), w)
    elif kind == "range":
        c = stream(seed, nb * 65).reshape(nb, 65)
        x = p1 + ((c[:, 0] >> np.uint64(8)) % np.uint64(p2 - p1 + 1)).astype(np.int64)
        zero = (c[:, 0] & np.uint64(7)) == 0
        g = gauss_int(c[:, 1:].reshape(nb, 16, 4))
        w = ldexp32(g, (x - 23)[:, None])
        w[zero] = 0.0
    elif kind == "zeros":
        c = stream(seed, nb * 65).reshape(nb, 65)
        mode = (c[:, 0] & np.uint64(3)).astype(np.int64)
        pos = ((c[:, 0] >> np.uint64(8)) % np.uint64(16)).astype(np.int64)
        neg = ((c[:, 0] >> np.uint64(16)) & np.uint64(1)).astype(bool)
        w = ldexp32(gauss_int(c[:, 1:].reshape(nb, 16, 4)), p1)
        keep = np.ones((nb, 16), dtype=bool)
        keep[mode == 0] = False
        one = np.zeros((nb, 16), dtype=bool)
        one[np.arange(nb), pos] = True
        keep[mode == 1] = one[mode == 1]
        zero = np.where(neg[:, None], np.float32(-0.0), np.float32(0.0))
        w = np.where(keep, w, zero).astype(np.float32)
    elif kind == "bits":
        c = stream(seed, n)
        mag = np.uint64(p1) + (c >> np.uint64(1)) % np.uint64(p2 - p1 + 1)
        w = ((mag | ((c & np.uint64(1)) << np.uint64(31))).astype(np.uint32)).view(np.float32)
    elif kind == "ties":
        w = make_ties(seed, nb, p1)
    else:
        raise ValueError(kind)
    return np.ascontiguousarray(w.reshape(n_out, n_in).astype(np.float32))


def make_ties(seed, nb, j) -> np.ndarray:
    c = stream(seed, nb * 18).reshape(nb, 18)
    w = np.zeros((nb, 16), dtype=np.float32)
    for b in range(nb):
        c0, c1 = int(c[b, 0]), int(c[b, 1])
        if b == 0:
            s, unit = np.float32(448.0), 0x7E
        elif c0 % 4 == 0:
            i = 1 + (c0 >> 2) % 125
            s = np.float32((float(E4M3[i]) + float(E4M3[i + 1])) / 2)
            unit = i if i % 2 == 0 else i + 1
        else:
            unit = 1 + (c0 >> 2) % 126
            s = E4M3[unit]
        p = c1 % 16
        amax = ldexp32(np.array([float(s) * 6.0]), j)[0]
        w[b, p] = -amax if (c1 >> 4) & 1 else amax
        step = float(E4M3[unit])
        for i in range(16):
            if i == p:
                continue
            ci = int(c[b, 2 + i])
            x = ldexp32(np.array([float(TIES[ci % 7]) * step]), j)[0]
            var = (ci >> 8) % 4
            if var == 2:
                x = np.nextafter(x, np.float32(0))
            elif var == 3:
                x = np.nextafter(x, np.float32(np.inf))
            w[b, i] = -x if (ci >> 16) & 1 else x
    return w


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & M64
    return h


def modelopt_quantize(w: np.ndarray, given_s2=None):
    s2_in = None
    if given_s2 is not None:
        s2_in = torch.from_numpy(np.array(given_s2, dtype=np.uint32).view(np.float32)).reshape(())
    q, scale, scale2 = NVFP4QTensor.quantize(torch.from_numpy(w.copy()), 16,
                                              weights_scaling_factor_2=s2_in)
    codes = q._quantized_data.numpy().astype(np.uint8)
    scales = scale.view(torch.uint8).numpy().astype(np.uint8)
    s2 = np.array([scale2.float().item()], dtype=np.float32)
    assert codes.shape == (w.shape[0], w.shape[1] // 2) and scales.shape == (w.shape[0], w.shape[1] // 16)
    return codes, scales, int(s2.view(np.uint32)[0])


def check_half_precision_inputs():
    """ModelOpt's export quantizes bf16/fp16 weights as they are. Show that this equals quantizing
    the same values widened to float32 (what our float quantizer does), so the fixtures cover it."""
    w = make_input("outlier", 7, 64, 1536, -27, 12)
    for dt in (torch.bfloat16, torch.float16):
        narrow = torch.from_numpy(w).to(dt)
        a = NVFP4QTensor.quantize(narrow, 16)
        b = NVFP4QTensor.quantize(narrow.float(), 16)
        assert torch.equal(a[0]._quantized_data, b[0]._quantized_data), dt
        assert torch.equal(a[1].view(torch.uint8), b[1].view(torch.uint8)), dt
        assert a[2].float().item() == b[2].float().item(), dt
    print("bf16 and fp16 inputs quantize exactly as their float32 widening")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent.parent / "fixtures/modelopt"))
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    check_half_precision_inputs()
    lines, blobs = [], []
    total_blocks = total_sub = 0
    for name, kind, seed, n_out, n_in, p1, p2, *given in CASES:
        given_s2 = given[0] if given else None
        w = make_input(kind, seed, n_out, n_in, p1, p2)
        assert np.all(np.isfinite(w))
        amax = float(np.max(np.abs(w)))
        expect = "match"
        if amax == 0.0:
            expect = "spec_zero"
        elif given_s2 is None and np.float32(amax) / np.float32(2688.0) == 0.0:
            expect = "refuse"
        codes, scales, s2_bits = modelopt_quantize(w, given_s2)
        given_txt = "-" if given_s2 is None else f"{given_s2:08x}"
        sub = int(np.count_nonzero(scales < 0x08))
        lines.append(f"{name} {kind} {seed} {n_out} {n_in} {p1} {p2} "
                     f"{fnv1a64(w.tobytes()):016x} {s2_bits:08x} {expect} {sub} {given_txt}")
        blobs += [codes.tobytes(), scales.tobytes()]
        blocks = scales.size
        if expect == "match":
            total_blocks += blocks
            total_sub += sub
        print(f"{name:18s} {kind:8s} {n_out:5d}x{n_in:<5d} blocks {blocks:6d} amax {amax:.3e} "
              f"scale2 0x{s2_bits:08x} subnormal-scale blocks {sub:5d} {expect}")
    blob = b"".join(blobs)
    (out / "outputs.bin").write_bytes(blob)
    with open(out / "cases.txt", "w") as f:
        f.write(f"# written by tools/gen_modelopt_fixtures.py: nvidia-modelopt "
                f"{__import__('modelopt').__version__}, torch {torch.__version__} (CPU)\n")
        f.write("# name kind seed n_out n_in p1 p2 input_fnv64 scale2_bits expect sub_blocks "
                "given_s2\n")
        f.write(f"#outputs {len(blob)} {fnv1a64(blob):016x}\n")
        f.write("\n".join(lines) + "\n")
    print(f"{total_blocks} blocks to match ({total_sub} with subnormal scales); "
          f"outputs.bin {len(blob)} bytes")


if __name__ == "__main__":
    main()

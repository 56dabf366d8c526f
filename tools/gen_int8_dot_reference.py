#!/usr/bin/env python3
"""Reference data for the CPU backend's integer-activation kernels (QuantizedInt8Test).

Writes src/test/resources/io/tqserve/backend/cpu/int8-dot-reference.json: small group-affine quantized matrices
(MLX layout: codes packed LSB first into little-endian uint32 words, bf16 scales and biases) with an activation row,
and what NumPy computes from those stored values:

  * the quantized activations: per block of 64 columns (4-bit) or 32 (8-bit), amax = max|x| (float32),
    xq = floor(x * (R / amax) + 0.5) with the product rounded to float32 first, d = amax / R (float32), where the
    case's "range" R is 127 (int8, QuantizedInt8's loops) or 1092 (4-bit only, QuantizedWide4's loops);
  * "out": the kernels' formula in float64, sum over blocks of s * d * sum((q - z) * xq) plus
    sum over groups of (b + z * s) * sum(x), z = 128 for 8-bit codes and 0 for 4-bit;
  * "dense": the plain product sum((s * q + b) * x) in float64 (the dequantized matrix against the float activations);
  * cases with extreme codes (0 and the largest) against activations of +-1 (|xq| = R): the largest 16-bit
    partial sums the kernels meet;
  * "bound": sum over blocks of d / 2 * sum(|s * (q - z)|), the most activation rounding can move "out" from "dense".

Run from the repository root: python3 tools/gen_int8_dot_reference.py (NumPy only; seeded, so the file is stable).
"""
import json
import numpy as np

OUT = "src/test/resources/io/tqserve/backend/cpu/int8-dot-reference.json"
CASES = [(4, 64, 8, 256, False), (4, 128, 8, 256, False), (8, 32, 8, 128, False), (8, 64, 8, 256, False),
         (8, 64, 4, 128, True), (4, 64, 4, 128, True),
         # the wide 4-bit range, appended so that the cases above keep their random draws
         (4, 64, 8, 256, False, 1092), (4, 128, 8, 256, False, 1092), (4, 64, 4, 128, True, 1092)]


def bf16(a):
    """float32 values rounded to bf16 (round to nearest even), as uint16 bits and as float32."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return u, (u.astype(np.uint32) << 16).view(np.float32)


def case(rng, bits, gs, rows, cols, extreme, r=127):
    groups = cols // gs
    codes = rng.integers(0, 1 << bits, size=(rows, cols), dtype=np.uint32)
    if extreme:  # the largest 16-bit partial sums the kernels can meet: extreme codes against |xq| = r
        codes = np.where(rng.random((rows, cols)) < 0.5, 0, (1 << bits) - 1).astype(np.uint32)
        codes[0, :] = 0
    per = 32 // bits
    words = np.zeros((rows, cols // per), dtype=np.uint32)
    for k in range(per):
        words |= codes[:, k::per] << np.uint32(k * bits)
    s_bits, s = bf16(rng.uniform(0.002, 0.02, size=(rows, groups)).astype(np.float32))
    b_bits, b = bf16(rng.uniform(-0.1, 0.1, size=(rows, groups)).astype(np.float32))
    x = rng.standard_normal(cols).astype(np.float32)
    x[rng.integers(0, cols, size=3)] *= np.float32(8)  # a few outliers, as activations have
    if extreme:
        x = np.where(rng.random(cols) < 0.5, np.float32(-1), np.float32(1)).astype(np.float32)
        x[: cols // 2] = np.float32(-1)
    if bits == 8 and not extreme:
        x[:32] = np.float32(0)  # a block of zeros (d = 0)
    blk = 64 if bits == 4 else 32
    z = 128 if bits == 8 else 0
    xq = np.zeros(cols, dtype=np.int64)
    d = np.zeros(cols // blk, dtype=np.float32)
    for t in range(cols // blk):
        xb = x[t * blk:(t + 1) * blk]
        amax = np.float32(np.max(np.abs(xb)))
        inv = np.float32(0) if amax == 0 else np.float32(np.float32(r) / amax)
        prod = (xb * inv).astype(np.float32)
        xq[t * blk:(t + 1) * blk] = np.floor(prod.astype(np.float64) + 0.5).astype(np.int64)
        d[t] = np.float32(amax / np.float32(r))
    xsum = np.array([np.sum(x[g * gs:(g + 1) * gs].astype(np.float64)) for g in range(groups)])
    sg = np.repeat(s.astype(np.float64), gs, axis=1)   # scale per column
    bg = np.repeat(b.astype(np.float64), gs, axis=1)
    dcol = np.repeat(d.astype(np.float64), blk)
    qz = codes.astype(np.int64) - z
    out = (sg * dcol * qz * xq).sum(axis=1) + ((b.astype(np.float64) + z * s.astype(np.float64)) * xsum).sum(axis=1)
    dense = ((sg * codes.astype(np.float64) + bg) * x.astype(np.float64)).sum(axis=1)
    bound = (np.abs(sg * qz) * dcol / 2).sum(axis=1)
    return {
        "bits": bits, "group_size": gs, "rows": rows, "cols": cols, "range": r,
        "words": words.reshape(-1).tolist(),
        "scales_bf16": s_bits.reshape(-1).tolist(), "biases_bf16": b_bits.reshape(-1).tolist(),
        "x": [float(v) for v in x],
        "xq": xq.tolist(), "d": [float(v) for v in d],
        "out": out.tolist(), "dense": dense.tolist(), "bound": bound.tolist(),
    }


def main():
    rng = np.random.default_rng(20261202)
    data = {"generator": "tools/gen_int8_dot_reference.py", "numpy": np.__version__,
            "cases": [case(rng, *c) for c in CASES]}
    with open(OUT, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()

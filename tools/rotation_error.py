#!/usr/bin/env python3
"""Per matrix of a Llama-style bf16 model: the kurtosis of its weights and the relative error of MLX affine
quantization (4-bit, group 64, bf16 scales and biases, MLX's rounding as docs/quantization.md states it), plain and
after the rotation `./tqserve quantize --rotate` applies (norm scale folded into the matrices reading the stream,
then a randomized Hadamard rotation of the stream: W·diag(g)·Rᵀ for q/k/v/gate/up, R·W for o/down).

The error is ||Q(W) - W|| / ||W|| (Frobenius) in the basis the layer computes in, so plain and rotated compare
directly: for a stream-reading matrix the plain error is weighted by the norm scale it is folded with. A Gaussian
matrix has kurtosis 3, and rotating it leaves it Gaussian: rotation can only help where the kurtosis (outliers) is
higher.

Usage: tools/rotation_error.py MODEL_DIR [--bits 4] [--group-size 64] [--seed 1]
Needs only numpy.
"""
import argparse
import glob
import os

import numpy as np

from outlier_copy import bf16_to_f32, read


def quantize(w, bits, gs):
    r, c = w.shape
    g = w.reshape(r, c // gs, gs).astype(np.float32)
    lo, hi = g.min(-1, keepdims=True), g.max(-1, keepdims=True)
    nb = np.float32(2 ** bits - 1)
    mask = np.abs(lo) > np.abs(hi)
    scale = np.maximum((hi - lo) / nb, np.float32(1e-7))
    scale = np.where(mask, scale, -scale)
    edge = np.where(mask, lo, hi)
    q0 = np.rint(edge / scale)
    bias = np.where(q0 != 0, edge, 0).astype(np.float32)
    scale = np.where(q0 != 0, edge / np.where(q0 != 0, q0, 1), scale).astype(np.float32)
    q = np.clip(np.rint((g - bias) / scale), 0, nb)
    bf = lambda x: bf16_to_f32(((x.view(np.uint32) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)) >> 16).astype(np.uint16))
    return (q * bf(scale) + bf(bias)).reshape(r, c)


def hadamard(n, seed):
    h = np.array([[1.0]])
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(n) * np.random.default_rng(seed).choice([-1.0, 1.0], size=n)[None, :]


def main():
    p = argparse.ArgumentParser()
    p.add_argument('model')
    p.add_argument('--bits', type=int, default=4)
    p.add_argument('--group-size', type=int, default=64)
    p.add_argument('--seed', type=int, default=1)
    a = p.parse_args()
    t = {}
    for f in sorted(glob.glob(os.path.join(a.model, '*.safetensors'))):
        t.update({k: bf16_to_f32(v) for k, v in read(f).items()})
    dim = t['model.embed_tokens.weight'].shape[1]
    if dim & (dim - 1):
        raise SystemExit('this script rotates power-of-two widths only')
    r = hadamard(dim, a.seed)
    err = lambda w: float(np.linalg.norm(quantize(w, a.bits, a.group_size) - w) / np.linalg.norm(w))
    kurt = lambda w: float(((w - w.mean()) ** 4).mean() / w.var() ** 2)
    print(f'| matrix | kurtosis | {a.bits}-bit error plain | rotated |')
    print('|---|---|---|---|')
    layer = 0
    while f'model.layers.{layer}.input_layernorm.weight' in t:
        pre = f'model.layers.{layer}.'
        for m, norm in (('self_attn.q_proj', 'input_layernorm'), ('self_attn.k_proj', 'input_layernorm'),
                        ('self_attn.v_proj', 'input_layernorm'), ('self_attn.o_proj', None),
                        ('mlp.gate_proj', 'post_attention_layernorm'), ('mlp.up_proj', 'post_attention_layernorm'),
                        ('mlp.down_proj', None)):
            w = t[pre + m + '.weight']
            if norm:
                g = t[pre + norm + '.weight'][None, :]
                plain = float(np.linalg.norm((quantize(w, a.bits, a.group_size) - w) * g) / np.linalg.norm(w * g))
                rotated = err((w * g) @ r.T)
            else:
                plain, rotated = err(w), err(r @ w)
            print(f'| {pre}{m} | {kurt(w):.2f} | {plain:.4f} | {rotated:.4f} |')
        layer += 1
    e = t['model.embed_tokens.weight']
    print(f'| model.embed_tokens | {kurt(e):.2f} | {err(e):.4f} | {err(e @ r.T):.4f} |')


if __name__ == '__main__':
    main()

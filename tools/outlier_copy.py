#!/usr/bin/env python3
"""Writes a copy of a Llama-style bf16 safetensors model with outlier input channels, computing the same function.

Trained LLMs carry a few residual-stream channels with very large weights in the matrices that read the stream
(the "massive activation" / outlier-channel effect that QuaRot-style rotation targets). The embedded tiny model has
none (its weights are close to Gaussian), so `./tqserve quantize --rotate` has nothing to spread there. This script
makes a copy with such channels without changing the model's function: for CHANNELS residual channels c, every
RMSNorm scale is divided by SCALE at c and the input column c of every matrix reading that norm's output
(q/k/v_proj after input_layernorm, gate/up_proj after post_attention_layernorm) is multiplied by SCALE. SCALE is a
power of two, so the bf16 values are exact and the copy's logits equal the original's up to float32 summation order.
The final norm and the (tied) LM head are left alone.

Usage: tools/outlier_copy.py SRC_DIR OUT_DIR [--channels 8] [--scale 16] [--seed 1]
Needs only numpy. The copy's weights go to one model.safetensors; config, tokenizer and template files are copied.
"""
import argparse
import glob
import json
import os
import shutil
import struct

import numpy as np


def read(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    tensors = {}
    for name, v in header.items():
        if name == '__metadata__':
            continue
        if v['dtype'] != 'BF16':
            raise SystemExit(f'{name}: only BF16 tensors are supported, got {v["dtype"]}')
        s, e = v['data_offsets']
        tensors[name] = np.frombuffer(raw[8 + n + s:8 + n + e], dtype=np.uint16).reshape(v['shape']).copy()
    return tensors


def bf16_to_f32(a):
    return (a.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(a):
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        b = tensors[name].tobytes()
        header[name] = {'dtype': 'BF16', 'shape': list(tensors[name].shape), 'data_offsets': [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('src')
    p.add_argument('out')
    p.add_argument('--channels', type=int, default=8)
    p.add_argument('--scale', type=float, default=16.0)
    p.add_argument('--seed', type=int, default=1)
    a = p.parse_args()
    if np.log2(a.scale) % 1 != 0:
        raise SystemExit('--scale must be a power of two (exact in bf16)')
    tensors = {}
    for f in sorted(glob.glob(os.path.join(a.src, '*.safetensors'))):
        tensors.update(read(f))
    dim = tensors['model.embed_tokens.weight'].shape[1]
    channels = np.random.default_rng(a.seed).choice(dim, size=a.channels, replace=False)
    readers = {'input_layernorm': ('self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj'),
               'post_attention_layernorm': ('mlp.gate_proj', 'mlp.up_proj')}
    layer = 0
    while f'model.layers.{layer}.input_layernorm.weight' in tensors:
        prefix = f'model.layers.{layer}.'
        for norm, mats in readers.items():
            g = bf16_to_f32(tensors[prefix + norm + '.weight'])
            g[channels] /= a.scale
            tensors[prefix + norm + '.weight'] = f32_to_bf16(g)
            for m in mats:
                w = bf16_to_f32(tensors[prefix + m + '.weight'])
                w[:, channels] *= a.scale
                tensors[prefix + m + '.weight'] = f32_to_bf16(w)
        layer += 1
    os.makedirs(a.out, exist_ok=True)
    write(os.path.join(a.out, 'model.safetensors'), tensors)
    for f in os.listdir(a.src):
        if not f.endswith('.safetensors') and f != 'model.safetensors.index.json':
            src = os.path.join(a.src, f)
            if os.path.isfile(src):
                shutil.copy(src, os.path.join(a.out, f))
    print(f'{a.out}: {layer} layers, channels {sorted(channels.tolist())} scaled x{a.scale:g} in q/k/v/gate/up, '
          f'norm scales /{a.scale:g}')


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Pads a Llama-architecture bf16 model (Hugging Face layout) to more weights without changing its outputs.

    tools/pad-model.py SRC_DIR DST_DIR [--layers N] [--intermediate M]

The MLP is widened to M intermediate rows (zero rows appended to gate_proj and up_proj, zero columns to down_proj:
silu(0) * 0 = 0, so the extra columns add exact zeros), and layers are appended up to N, each a copy of the last
real layer with o_proj and down_proj zero: its attention and MLP add exact zeros to the residual stream, so the
logits are the source model's bit for bit on a backend whose sums do not depend on the row length beyond the
appended zeros (tqserve's CPU kernels: lane j of a row's accumulator adds columns j, j+L, ...). M - I must be a
multiple of 32 (two 16-lane steps).

What it is for: a decode step of the padded model reads as many bytes as a real model of its size, with the source
model's tokens. `bench speculative --model DST_DIR` then measures prompt lookup on a memory-bound model whose
output copies what the source model's copies (the embedded model is small enough for its weights to sit mostly in
a server's last-level cache, where an extra row costs nearly a plain step). Needs only numpy.
"""
import argparse
import json
import shutil
import struct
from pathlib import Path

import numpy as np


def read_tensors(src: Path):
    index = src / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.exists() else [
        "model.safetensors"]
    tensors = {}
    for name in files:
        data = (src / name).read_bytes()
        n = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8:8 + n])
        for key, meta in header.items():
            if key == "__metadata__":
                continue
            if meta["dtype"] != "BF16":
                raise SystemExit(f"{key}: dtype {meta['dtype']}, only BF16 is padded")
            a, b = meta["data_offsets"]
            raw = np.frombuffer(data, dtype="<u2", count=(b - a) // 2, offset=8 + n + a)
            tensors[key] = raw.reshape(meta["shape"]).copy()
    return tensors


def write_tensors(dst: Path, tensors: dict):
    header, offset = {}, 0
    for key in sorted(tensors):
        t = tensors[key]
        header[key] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(dst / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for key in sorted(tensors):
            f.write(np.ascontiguousarray(tensors[key]).tobytes())
    index = {"metadata": {"total_size": offset}, "weight_map": {k: "model.safetensors" for k in sorted(tensors)}}
    (dst / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    p.add_argument("--layers", type=int)
    p.add_argument("--intermediate", type=int)
    args = p.parse_args()
    config = json.loads((args.src / "config.json").read_text())
    if config.get("model_type") not in ("llama", "mistral", "qwen2"):
        raise SystemExit(f"model_type {config.get('model_type')}: only Llama-layout models are padded")
    layers, inter = config["num_hidden_layers"], config["intermediate_size"]
    new_layers = args.layers or layers
    new_inter = args.intermediate or inter
    if new_layers < layers or new_inter < inter or (new_inter - inter) % 32:
        raise SystemExit("--layers must not shrink the model; --intermediate must add a multiple of 32")
    t = read_tensors(args.src)
    for i in range(layers):
        pre = f"model.layers.{i}.mlp."
        extra = new_inter - inter
        for name in ("gate_proj", "up_proj"):
            w = t[pre + name + ".weight"]
            t[pre + name + ".weight"] = np.concatenate([w, np.zeros((extra, w.shape[1]), w.dtype)], axis=0)
        w = t[pre + "down_proj.weight"]
        t[pre + "down_proj.weight"] = np.concatenate([w, np.zeros((w.shape[0], extra), w.dtype)], axis=1)
    last = f"model.layers.{layers - 1}."
    for i in range(layers, new_layers):
        for key in [k for k in list(t) if k.startswith(last)]:
            copy = t[key].copy()
            if key.endswith("o_proj.weight") or key.endswith("down_proj.weight"):
                copy[...] = 0
            t[f"model.layers.{i}." + key[len(last):]] = copy
    args.dst.mkdir(parents=True, exist_ok=True)
    for f in args.src.iterdir():
        if f.is_file() and not f.name.startswith("model") and f.name != "reference_outputs.json":
            shutil.copy(f, args.dst / f.name)
    config["num_hidden_layers"], config["intermediate_size"] = new_layers, new_inter
    (args.dst / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    write_tensors(args.dst, t)
    total = sum(v.nbytes for v in t.values())
    print(f"{args.dst}: {new_layers} layers, intermediate {new_inter}, {total / 1e6:.1f} MB of bf16 weights")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Independent re-computation of reference_outputs.json with numpy only (no torch/transformers).

Reads config.json (new `rope_parameters`/`dtype` or old `rope_theta`/`rope_scaling`/`torch_dtype`
layout), the safetensors files (single or sharded, bf16/f16/f32) and recomputes, in float64, the
last-position logits and the greedy tokens of every prompt. It doubles as a compact statement of the
math a loader has to implement:

  x = embed[ids]
  per layer: h = rmsnorm(x) * w_in
             q = h Wq^T (+bq), k = h Wk^T (+bk), v = h Wv^T (+bv)     (biases: Qwen2)
             q, k = rmsnorm_per_head(q) * w_qnorm, ... (Qwen3, before RoPE)
             q, k = rope(q), rope(k)        (rotate-half pairing: i with i + head_dim/2)
             a = softmax(q k^T / sqrt(head_dim) + causal) v, kv head = q head // (numHeads/numKvHeads)
             x = x + a Wo^T; x = x + (silu(g Wg^T) * (g Wu^T)) Wd^T with g = rmsnorm(x) * w_post
  logits = (rmsnorm(x) * w_final) lm_head^T, lm_head = embed if the file has no lm_head.weight

Usage: python goldens/models/check_reference_numpy.py [model-dir ...]   (default: every model here)
"""

from __future__ import annotations

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        lo, hi = meta["data_offsets"]
        buf, shape = data[lo:hi], meta["shape"]
        if meta["dtype"] == "BF16":
            arr = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif meta["dtype"] == "F16":
            arr = np.frombuffer(buf, dtype="<f2")
        elif meta["dtype"] == "F32":
            arr = np.frombuffer(buf, dtype="<f4")
        else:
            raise ValueError(meta["dtype"])
        out[name] = arr.astype(np.float64).reshape(shape)
    return out


def load_weights(model_dir: Path) -> dict[str, np.ndarray]:
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    weights = {}
    for f in files:
        weights.update(read_safetensors(model_dir / f))
    return weights


def rope_params(cfg: dict) -> dict:
    if "rope_parameters" in cfg:  # transformers >= 5 layout
        rp = dict(cfg["rope_parameters"])
    else:  # older layout: top-level rope_theta plus optional rope_scaling
        rp = dict(cfg.get("rope_scaling") or {})
        rp["rope_theta"] = cfg.get("rope_theta", 10000.0)
    rp["rope_type"] = rp.get("rope_type", rp.get("type", "default"))
    return rp


def inv_freq(cfg: dict, head_dim: int) -> np.ndarray:
    rp = rope_params(cfg)
    # float32 like the reference implementation, then widened
    base = (1.0 / (np.float32(rp["rope_theta"]) ** (
        np.arange(0, head_dim, 2).astype(np.float32) / np.float32(head_dim)))).astype(np.float64)
    if rp["rope_type"] == "default":
        return base
    if rp["rope_type"] != "llama3":
        raise ValueError(rp["rope_type"])
    factor, lo, hi = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
    old = rp["original_max_position_embeddings"]
    out = []
    for f in base:
        wavelen = 2 * math.pi / f
        if wavelen < old / hi:
            out.append(f)
        elif wavelen > old / lo:
            out.append(f / factor)
        else:
            s = (old / wavelen - lo) / (hi - lo)
            out.append((1 - s) * f / factor + s * f)
    return np.array(out)


def rmsnorm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x: np.ndarray, freqs: np.ndarray) -> np.ndarray:
    # x: (heads, seqLen, headDim); freqs: (headDim/2,)
    pos = np.arange(x.shape[1])[:, None] * freqs[None, :]  # (seqLen, headDim/2)
    cos, sin = np.cos(pos), np.sin(pos)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


class Model:
    def __init__(self, model_dir: Path):
        self.cfg = cfg = json.loads((model_dir / "config.json").read_text())
        self.w = load_weights(model_dir)
        self.dim = cfg["hidden_size"]
        self.num_heads = cfg["num_attention_heads"]
        self.num_kv_heads = cfg.get("num_key_value_heads", self.num_heads)
        self.head_dim = cfg.get("head_dim") or self.dim // self.num_heads
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["rms_norm_eps"]
        self.freqs = inv_freq(cfg, self.head_dim)
        self.lm_head = self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"])

    def last_logits(self, ids: list[int]) -> np.ndarray:
        w, hd = self.w, self.head_dim
        n = len(ids)
        x = w["model.embed_tokens.weight"][ids]  # (seqLen, dim)
        mask = np.triu(np.full((n, n), -np.inf), k=1)
        group = self.num_heads // self.num_kv_heads
        for layer in range(self.layers):
            p = f"model.layers.{layer}."
            h = rmsnorm(x, w[p + "input_layernorm.weight"], self.eps)
            proj = {}
            for name, heads in (("q", self.num_heads), ("k", self.num_kv_heads),
                                ("v", self.num_kv_heads)):
                t = h @ w[p + f"self_attn.{name}_proj.weight"].T
                if p + f"self_attn.{name}_proj.bias" in w:
                    t = t + w[p + f"self_attn.{name}_proj.bias"]
                t = t.reshape(n, heads, hd).transpose(1, 0, 2)  # (heads, seqLen, headDim)
                if name != "v" and p + f"self_attn.{name}_norm.weight" in w:
                    t = rmsnorm(t, w[p + f"self_attn.{name}_norm.weight"], self.eps)
                proj[name] = t
            q, k = rope(proj["q"], self.freqs), rope(proj["k"], self.freqs)
            out = np.empty((self.num_heads, n, hd))
            for head in range(self.num_heads):
                kv = head // group
                s = q[head] @ k[kv].T / math.sqrt(hd) + mask
                s = np.exp(s - s.max(-1, keepdims=True))
                out[head] = (s / s.sum(-1, keepdims=True)) @ proj["v"][kv]
            x = x + out.transpose(1, 0, 2).reshape(n, -1) @ w[p + "self_attn.o_proj.weight"].T
            g = rmsnorm(x, w[p + "post_attention_layernorm.weight"], self.eps)
            gate = g @ w[p + "mlp.gate_proj.weight"].T
            up = g @ w[p + "mlp.up_proj.weight"].T
            x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T
        return rmsnorm(x[-1], w["model.norm.weight"], self.eps) @ self.lm_head.T


def check(model_dir: Path) -> bool:
    ref = json.loads((model_dir / "reference_outputs.json").read_text())
    model = Model(model_dir)
    ok = True
    worst_logit, worst_margin = 0.0, math.inf
    inv = np.array(ref["model"]["rope_inv_freq"])
    rope_err = float(np.max(np.abs(model.freqs - inv) / inv))
    ok &= rope_err < 1e-6
    for i, p in enumerate(ref["prompts"]):
        seq = list(p["input_ids"])
        tokens = []
        for step in range(len(p["greedy_32"])):
            logits = model.last_logits(seq)
            if step == 0:
                diff = float(np.max(np.abs(logits - np.array(p["last_logits"]))))
                worst_logit = max(worst_logit, diff)
                top = [int(t) for t in np.argsort(-logits, kind="stable")[:20]]
                ok &= top[:5] == p["last_logits_top20"]["ids"][:5]
            two = np.sort(logits)[-2:]
            worst_margin = min(worst_margin, float(two[1] - two[0]))
            tokens.append(int(np.argmax(logits)))
            seq.append(tokens[-1])
        same = tokens == p["greedy_32"]
        ok &= same
        if not same:
            print(f"  prompt {i}: greedy differs: {tokens} vs {p['greedy_32']}")
    ok &= worst_logit < 1e-3
    print(f"{model_dir.name}: head_dim {model.head_dim}, rope {rope_params(model.cfg)}, "
          f"inv_freq max rel err {rope_err:.2e}, last_logits max |diff| {worst_logit:.2e}, "
          f"greedy tokens {'identical' if ok else 'DIFFER'}, min margin (float64) "
          f"{worst_margin:.5f} -> {'OK' if ok else 'FAIL'}")
    return ok


def main(argv: list[str]) -> int:
    dirs = [Path(a) for a in argv] or sorted(
        d for d in HERE.iterdir() if (d / "reference_outputs.json").exists())
    results = [check(d) for d in dirs]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

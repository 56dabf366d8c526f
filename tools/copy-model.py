#!/usr/bin/env python3
"""Writes a Llama-architecture bf16 model whose greedy output copies its context: a two-layer induction circuit.

    tools/copy-model.py TOKENIZER_DIR DST_DIR [--seed 7]

Weights are set by hand, not trained: layer 0 has two previous-token heads (one attends to the position before,
one to the position two before, by RoPE phase alone) that write the content code of those tokens into their own
parts of the residual stream; layer 1 has an induction head whose query is the code of the current token and the
one before it and whose keys are the codes of the two tokens before each earlier position, so it attends to where
the last two tokens occurred before and copies the token that followed them (its output code) into a part of the
residual the untied lm_head reads. Given a text and its beginning again, it writes the text out again, wraps around
at its end, and where the last two tokens never occurred before, writes whatever the mixed attention gives. MLPs
are zero. The tokenizer (and vocabulary size) are those of TOKENIZER_DIR.

What it is for: the embedded model has no induction copy (given a page once or several times it writes new text),
so prompt-lookup speculation cannot be measured on it as on a model asked to repeat or edit a page.
`tools/pad-model.py DST PADDED --layers 24 --intermediate 5632` then gives it the weight bytes of a 0.46 GB model
(the padding adds exact zeros), and `bench speculative --model PADDED` measures speculation on a memory-bound model
whose output copies its prompt. Needs only numpy.

Layout (hidden 512, 4 heads of 128, rope_theta 1e14 so that RoPE pairs 16..63 barely turn over a few thousand
positions and carry content, while pairs 0..5 turn fast enough to address offsets):
    residual [0,128) output code F(t) of the token   [128,176) content code C(t)   [176,224) C of the token before
    [224,272) C of the token two before              [272] a constant 1            [384,512) the copied F
"""
import argparse
import json
import shutil
import struct
from pathlib import Path

import numpy as np

HIDDEN, HEADS, HEAD_DIM = 512, 4, 128
HALF = HEAD_DIM // 2
THETA = 1e14
POS_PAIRS = 6            # RoPE pairs 0..5 address positions
CONTENT = list(range(16, 64))  # RoPE pairs whose angle stays small over the context: content matching
CODE = len(CONTENT)      # 48-dim content codes
F_DIM = 128
F0, C0, P1, P2, ONE, O0 = 0, 128, 176, 224, 272, 384
INTER = 1408
POS_GAIN = 400.0         # layer 0 query scale: the wanted offset wins by about 26 in the softmax's logits
MATCH_GAIN = 170.0       # layer 1 query scale: a two-token match beats a one-token one by about 15
OUT_GAIN = 24.0          # lm_head scale: the copied token's logit about 24 above the vocabulary's noise


def bf16(a: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def unit_rows(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tokenizer", type=Path)
    p.add_argument("dst", type=Path)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    src_config = json.loads((args.tokenizer / "config.json").read_text())
    vocab = src_config["vocab_size"]
    rng = np.random.default_rng(args.seed)
    f_code = unit_rows(rng, vocab, F_DIM)
    c_code = unit_rows(rng, vocab, CODE)
    theta = THETA ** (-np.arange(HALF) * 2.0 / HEAD_DIM)

    emb = np.zeros((vocab, HIDDEN))
    emb[:, F0:F0 + F_DIM] = f_code
    emb[:, C0:C0 + CODE] = c_code
    emb[:, ONE] = 1.0
    # RMSNorm of layer 0 sees the embedding alone: |x|^2 = 3, so x is scaled by s0
    s0 = 1 / np.sqrt(3 / HIDDEN + 1e-5)
    # layer 1 sees two copied codes more (each about unit norm when attention is sharp)
    s1 = 1 / np.sqrt(5 / HIDDEN + 1e-5)

    t = {}
    t["model.embed_tokens.weight"] = emb
    for layer in range(2):
        pre = f"model.layers.{layer}."
        q = np.zeros((HEADS * HEAD_DIM, HIDDEN))
        k = np.zeros((HEADS * HEAD_DIM, HIDDEN))
        v = np.zeros((HEADS * HEAD_DIM, HIDDEN))
        o = np.zeros((HIDDEN, HEADS * HEAD_DIM))
        if layer == 0:
            for head, offset, dst in ((0, 1, P1), (1, 2, P2)):
                base = head * HEAD_DIM
                for j in range(POS_PAIRS):
                    # q = POS_GAIN * (1, 0) on pair j; k = the same turned by offset * theta_j: after RoPE,
                    # q_m . k_n = POS_GAIN * sum_j cos((n - m + offset) theta_j), largest at n = m - offset
                    q[base + j, ONE] = POS_GAIN / s0
                    k[base + j, ONE] = np.cos(offset * theta[j]) / s0
                    k[base + j + HALF, ONE] = np.sin(offset * theta[j]) / s0
                for i in range(CODE):  # the value is the token's content code, written to dst
                    v[base + i, C0 + i] = 1 / s0
                    o[dst + i, base + i] = 1.0
        else:
            base = 0
            for i, j in enumerate(CONTENT):
                # query: C(current) on the first dims of the content pairs, C(previous) on the second;
                # key: C(previous) and C(two before) at the same places
                q[base + j, C0 + i] = MATCH_GAIN / s1
                q[base + j + HALF, P1 + i] = MATCH_GAIN / s1
                k[base + j, P1 + i] = 1 / s1
                k[base + j + HALF, P2 + i] = 1 / s1
            for i in range(F_DIM):  # the value is the attended token's output code, written to the copy slot
                v[base + i, F0 + i] = 1 / s1
                o[O0 + i, base + i] = 1.0
        t[pre + "self_attn.q_proj.weight"] = q
        t[pre + "self_attn.k_proj.weight"] = k
        t[pre + "self_attn.v_proj.weight"] = v
        t[pre + "self_attn.o_proj.weight"] = o
        t[pre + "input_layernorm.weight"] = np.ones(HIDDEN)
        t[pre + "post_attention_layernorm.weight"] = np.ones(HIDDEN)
        t[pre + "mlp.gate_proj.weight"] = np.zeros((INTER, HIDDEN))
        t[pre + "mlp.up_proj.weight"] = np.zeros((INTER, HIDDEN))
        t[pre + "mlp.down_proj.weight"] = np.zeros((HIDDEN, INTER))
    t["model.norm.weight"] = np.ones(HIDDEN)
    head = np.zeros((vocab, HIDDEN))
    # the final RMSNorm sees about six unit codes: the copied F arrives scaled by about sqrt(512 / 6)
    head[:, O0:O0 + F_DIM] = f_code * OUT_GAIN / np.sqrt(HIDDEN / 6)
    t["lm_head.weight"] = head

    args.dst.mkdir(parents=True, exist_ok=True)
    for f in args.tokenizer.iterdir():
        if f.is_file() and f.name.startswith(("tokenizer", "generation_config", "special_tokens")):
            shutil.copy(f, args.dst / f.name)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False, "mlp_bias": False,
        "bos_token_id": src_config.get("bos_token_id"), "eos_token_id": src_config.get("eos_token_id"),
        "dtype": "bfloat16", "head_dim": HEAD_DIM, "hidden_act": "silu", "hidden_size": HIDDEN,
        "intermediate_size": INTER, "max_position_embeddings": 2048, "num_attention_heads": HEADS,
        "num_hidden_layers": 2, "num_key_value_heads": HEADS, "rms_norm_eps": 1e-5,
        "rope_parameters": {"rope_theta": THETA, "rope_type": "default"}, "rope_theta": THETA,
        "tie_word_embeddings": False, "vocab_size": vocab,
    }
    (args.dst / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    header, offset, blobs = {}, 0, []
    for key in sorted(t):
        b = bf16(t[key])
        header[key] = {"dtype": "BF16", "shape": list(b.shape), "data_offsets": [offset, offset + b.nbytes]}
        offset += b.nbytes
        blobs.append(b)
    meta = json.dumps(header, separators=(",", ":")).encode()
    meta += b" " * (-len(meta) % 8)
    with open(args.dst / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(meta)))
        f.write(meta)
        for b in blobs:
            f.write(b.tobytes())
    print(f"{args.dst}: 2 layers, vocabulary {vocab}, {offset / 1e6:.1f} MB of bf16 weights")


if __name__ == "__main__":
    main()

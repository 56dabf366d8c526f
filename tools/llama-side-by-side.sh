#!/usr/bin/env bash
# tqserve's `bench decode` side by side with llama.cpp's `llama-bench` on the same weights and threads,
# interleaved (tqserve bf16, llama.cpp bf16, tqserve 8-bit, llama.cpp Q8_0, tqserve 4-bit, llama.cpp Q4_0, then the
# next round), so that a machine whose load or memory bandwidth drifts meets both engines alike. Prints every run,
# then medians and ratios as a markdown table.
#
# usage: tools/llama-side-by-side.sh --model DIR --llama-bench FILE --bf16 GGUF [--q8 GGUF] [--q4 GGUF]
#                                    [--rounds 3] [--threads 2] [--prompt 64] [--gen 64] [--tqserve ./tqserve]
#
#   --model DIR        the Hugging Face folder tqserve reads (e.g. the synthetic 0.58B model written by
#                      `./tqserve bench decode --synthetic-dir DIR`); its 8- and 4-bit arms are quantized from it by
#                      `bench decode --weights 8|4` (MLX affine, group 64)
#   --llama-bench FILE llama.cpp's llama-bench, built outside this repository
#   --bf16/--q8/--q4   GGUF files of the same weights: bf16, Q8_0 and Q4_0 (an arm without a file is skipped)
#   TQSERVE_JAVA_OPTS  passed through to the launcher (e.g. -Dtqserve.cpu.quant-activations=float)
#
# The GGUF files come from llama.cpp's own tools (not part of this repository):
#   python convert_hf_to_gguf.py DIR --outtype bf16 --outfile model-bf16.gguf
#   llama-quantize model-bf16.gguf model-q8_0.gguf Q8_0
#   llama-quantize model-bf16.gguf model-q4_0.gguf Q4_0
# (for the embedded tokenizer the converter's pre-tokenizer check must be told `gpt-2`; llama-bench feeds token ids
# and never tokenizes.) Q8_0/Q4_0 are blocks of 32 with one f16 scale (8.5 and 4.5 bits per weight); tqserve's
# 8/4-bit are groups of 64 with a bf16 scale and bias (8.5 and 4.5 bits per weight): the same bytes per weight.
set -euo pipefail

model="" llama="" rounds=3 threads=2 prompt=64 gen=64 tq="./tqserve"
declare -A gguf=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --llama-bench) llama="$2"; shift 2 ;;
    --bf16) gguf[bf16]="$2"; shift 2 ;;
    --q8) gguf[q8]="$2"; shift 2 ;;
    --q4) gguf[q4]="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --prompt) prompt="$2"; shift 2 ;;
    --gen) gen="$2"; shift 2 ;;
    --tqserve) tq="$2"; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ -n "$model" && -n "$llama" && -n "${gguf[bf16]:-}" ]] || { sed -n '7,8p' "$0" >&2; exit 2; }
[[ -x "$llama" ]] || { echo "not executable: $llama" >&2; exit 2; }
llama_dir=$(dirname "$llama")

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A weights=([bf16]=bf16 [q8]=8 [q4]=4)

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs;" \
     "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -o -w -E 'avx2|fma|avx512f|avx512_bf16|avx512_vnni|avx512vl' | sort -u | xargs)"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  for arm in bf16 q8 q4; do
    [[ -n "${gguf[$arm]:-}" ]] || continue
    log="$out/tq-$arm-$r.txt"
    "$tq" bench decode --model "$model" --weights "${weights[$arm]}" --no-sweep --no-batched \
        --threads "$threads" --prompt-tokens "$prompt" --decode-tokens "$gen" > "$log" 2> "$log.err"
    pf=$(awk '/prefill [0-9]+ tokens:/ {print $4; exit}' "$log")
    dc=$(awk '/decode +[0-9]+ tokens:/ {print $4; exit}' "$log")
    rf=$(awk '/decode roofline fraction:/ {print $4; exit}' "$log")
    echo "$pf $dc $rf" > "$out/tq-$arm-$r"
    echo "round $r $arm tqserve: prefill $pf tok/s, decode $dc tok/s, roofline $rf (load $(cut -d' ' -f1 /proc/loadavg))"
    LD_LIBRARY_PATH="$llama_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$llama" -m "${gguf[$arm]}" -t "$threads" \
        -p "$prompt" -n "$gen" -r 1 -o csv > "$out/ll-$arm-$r.csv" 2> "$out/ll-$arm-$r.err"
    python3 - "$out/ll-$arm-$r.csv" > "$out/ll-$arm-$r" <<'EOF'
import csv, sys
pp = tg = "nan"
for row in csv.DictReader(open(sys.argv[1])):
    if int(row["n_gen"]) == 0:
        pp = row["avg_ts"]
    elif int(row["n_prompt"]) == 0:
        tg = row["avg_ts"]
print(pp, tg)
EOF
    read -r lp lt < "$out/ll-$arm-$r"
    echo "round $r $arm llama.cpp: pp$prompt $lp tok/s, tg$gen $lt tok/s"
  done
done

python3 - "$out" "$rounds" "$prompt" "$gen" <<'EOF'
import os, statistics, sys
out, rounds, prompt, gen = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
names = {"bf16": ("bf16", "bf16"), "q8": ("8-bit g64", "Q8_0"), "q4": ("4-bit g64", "Q4_0")}
def runs(prefix, arm, col):
    vals = []
    for r in range(1, rounds + 1):
        p = os.path.join(out, f"{prefix}-{arm}-{r}")
        if os.path.exists(p):
            try:
                vals.append(float(open(p).read().split()[col]))
            except (ValueError, IndexError):
                pass
    return vals
def med(v):
    return statistics.median(v) if v else float("nan")
def fmt(v):
    return " ".join(f"{x:.1f}" for x in v)
print()
print(f"| weights (tqserve / llama.cpp) | tqserve prefill {prompt} | llama.cpp pp{prompt} | ratio "
      f"| tqserve decode | llama.cpp tg{gen} | ratio | tqserve roofline |")
print("|---|---|---|---|---|---|---|---|")
for arm in ("bf16", "q8", "q4"):
    tp, td, tr = runs("tq", arm, 0), runs("tq", arm, 1), runs("tq", arm, 2)
    lp, lt = runs("ll", arm, 0), runs("ll", arm, 1)
    if not td and not lt:
        continue
    print(f"| {names[arm][0]} / {names[arm][1]} | {med(tp):.1f} ({fmt(tp)}) | {med(lp):.1f} ({fmt(lp)}) "
          f"| {med(tp) / med(lp):.2f}x | {med(td):.1f} ({fmt(td)}) | {med(lt):.1f} ({fmt(lt)}) "
          f"| {med(td) / med(lt):.2f}x | {med(tr):.2f} |")
EOF

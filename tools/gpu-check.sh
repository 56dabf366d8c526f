#!/usr/bin/env bash
# The device check for tqserve's MLX path on a GPU (Apple silicon through Metal, NVIDIA through MLX's CUDA
# back-end). Given the jar and an MLX-C library built for the GPU, it runs
#   1. greedy parity on the embedded model: 32 greedy tokens of each reference prompt, float32 and native dtype,
#      against reference_outputs.json (bf16 KV);
#   2. the decode sweep bf16 vs turbo:k8v3 at contexts 256 / 1024 / 4096 with turbo-kernel=auto (the device's
#      fused kernel) and, for comparison, turbo-kernel=ops;
#   3. bench serve on the 0.58B synthetic model: the batched lane's aggregate tok/s with 1/2/4/8 streams;
#   4. bench decode on a 4-bit copy of the 0.58B synthetic model;
# and prints one summary table, with the targets of docs/benchmarks.md ("Device check targets") beside the
# measurements ("Device check targets" in docs/benchmarks.md). Every command's full output is kept in the
# output directory. GPU_CHECK_CONTEXTS overrides the sweep's contexts (e.g. 64,128 for a quick smoke run).
#
# usage: tools/gpu-check.sh --jar target/tqserve.jar --mlx-library /path/to/libmlxc.{so,dylib}
#                           [--model models/tiny-llama-h128] [--out gpu-check-out] [--java /path/to/java]
set -euo pipefail

JAR="" LIB="" MODEL="" OUT="gpu-check-out" JAVA_BIN=""
here="$(cd "$(dirname "$0")/.." && pwd)"
while [ $# -gt 0 ]; do
  case "$1" in
    --jar) JAR="$2"; shift 2 ;;
    --mlx-library) LIB="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --java) JAVA_BIN="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$JAR" ] && [ -f "$JAR" ] || { echo "gpu-check: --jar FILE is required (./mvnw -B package builds target/tqserve.jar)" >&2; exit 2; }
[ -n "$LIB" ] && [ -f "$LIB" ] || { echo "gpu-check: --mlx-library FILE is required (an MLX-C library built for the GPU)" >&2; exit 2; }
MODEL="${MODEL:-$here/models/tiny-llama-h128}"
[ -f "$MODEL/reference_outputs.json" ] || { echo "gpu-check: $MODEL has no reference_outputs.json" >&2; exit 2; }
if [ -z "$JAVA_BIN" ]; then
  JAVA_BIN="${JAVA_HOME:+$JAVA_HOME/bin/}java"
fi
command -v python3 >/dev/null 2>&1 || { echo "gpu-check: python3 is needed to read reference_outputs.json" >&2; exit 2; }
mkdir -p "$OUT"

tq() {
  "$JAVA_BIN" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED ${TQSERVE_JAVA_OPTS:-} -jar "$JAR" "$@"
}
MLX=(--backend mlx --mlx-library "$LIB")

echo "gpu-check: device and path" >&2
tq bench decode --model "$MODEL" "${MLX[@]}" --no-sweep --no-batched --decode-tokens 16 \
  > "$OUT/device.txt" 2> "$OUT/device.err" || { cat "$OUT/device.err" >&2; exit 1; }

# 1. greedy parity
declare -A PARITY
n_prompts="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["prompts"]))' "$MODEL/reference_outputs.json")"
for dtype in float32 native; do
  ok=0
  for ((i = 0; i < n_prompts; i++)); do
    python3 - "$MODEL/reference_outputs.json" "$i" "$OUT/prompt-$i.txt" "$OUT/expected-$i.txt" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["prompts"][int(sys.argv[2])]
open(sys.argv[3], "w").write(p["text"])
open(sys.argv[4], "w").write(p["greedy_32_text"])
PY
    echo "gpu-check: greedy parity, $dtype, prompt $((i + 1))/$n_prompts" >&2
    prompt="$(cat "$OUT/prompt-$i.txt"; printf x)"  # keeps the prompt's trailing newlines
    tq generate --model "$MODEL" "${MLX[@]}" --mlx-dtype "$dtype" --prompt "${prompt%x}" \
      --max-tokens 32 --temperature 0 > "$OUT/greedy-$dtype-$i.txt" 2> "$OUT/greedy-$dtype-$i.err" || true
    if cmp -s "$OUT/greedy-$dtype-$i.txt" "$OUT/expected-$i.txt"; then ok=$((ok + 1)); fi
  done
  PARITY[$dtype]="$ok/$n_prompts"
done

# 2. decode sweep, bf16 vs turbo, on the kernel path and on the ops path
for kernel in auto ops; do
  echo "gpu-check: decode sweep, turbo-kernel=$kernel" >&2
  tq bench decode --model "$MODEL" "${MLX[@]}" --mlx-turbo-kernel "$kernel" --kv turbo:k8v3 \
    --contexts "${GPU_CHECK_CONTEXTS:-256,1024,4096}" --max-context 4200 --no-batched > "$OUT/sweep-$kernel.txt" 2> "$OUT/sweep-$kernel.err" \
    || echo "gpu-check: the $kernel sweep failed (see $OUT/sweep-$kernel.err)" >&2
done

# 3. bench serve on the 0.58B synthetic model
echo "gpu-check: bench serve, 1/2/4/8 streams" >&2
tq bench serve --synthetic "${MLX[@]}" > "$OUT/serve.txt" 2> "$OUT/serve.err" \
  || echo "gpu-check: bench serve failed (see $OUT/serve.err)" >&2

# 4. a 4-bit model
echo "gpu-check: bench decode, 4-bit weights" >&2
tq bench decode --synthetic "${MLX[@]}" --weights 4 --no-sweep --no-batched > "$OUT/weights4.txt" \
  2> "$OUT/weights4.err" || echo "gpu-check: the 4-bit decode failed (see $OUT/weights4.err)" >&2

# The summary: one table on stdout.
python3 - "$OUT" "${PARITY[float32]}" "${PARITY[native]}" <<'PY'
import re, sys, pathlib
out = pathlib.Path(sys.argv[1])
def text(name):
    p = out / name
    return p.read_text() if p.exists() else ""
rows = []
dev = re.search(r"mlx: MLX [^\n]*", text("device.txt") + text("device.err"))
rows.append(("device", dev.group(0)[:110] if dev else "(see device.txt)", ""))
rows.append(("greedy parity, float32 (32 tokens)", sys.argv[2], ">= 5/5"))
rows.append(("greedy parity, native", sys.argv[3], "(reported)"))
targets = {256: ">= 0.80x", 1024: "(reported)", 4096: ">= 1.00x"}
for kernel in ("auto", "ops"):
    for m in re.finditer(r"^\| (\d+) \| ([\d.]+) \| ([\d.]+) \(([\d.]+)x\) \|", text(f"sweep-{kernel}.txt"), re.M):
        ctx = int(m.group(1))
        rows.append((f"decode ctx {ctx}, turbo:k8v3 ({kernel}) vs bf16",
                     f"{m.group(3)} vs {m.group(2)} tok/s = {m.group(4)}x",
                     targets.get(ctx, "") if kernel == "auto" else "(reference)"))
serve = {}
for m in re.finditer(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)x", text("serve.txt"), re.M):
    serve[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
for c in (1, 2, 4, 8):
    if c in serve:
        rows.append((f"bench serve, {c} stream(s), 0.58B", f"{serve[c][0]:.1f} tok/s = {serve[c][1]:.2f}x one",
                     ">= 4.00x" if c == 8 else ""))
w4 = re.search(r"decode\s+\d+ tokens: ([\d.]+) tok/s", text("weights4.txt"))
rows.append(("decode, 0.58B 4-bit weights", f"{w4.group(1)} tok/s" if w4 else "(failed: weights4.err)", "(reported)"))
w = max(len(r[0]) for r in rows)
v = max(len(r[1]) for r in rows)
print(f"| {'check':<{w}} | {'measured':<{v}} | target |")
print(f"|{'-' * (w + 2)}|{'-' * (v + 2)}|--------|")
for r in rows:
    print(f"| {r[0]:<{w}} | {r[1]:<{v}} | {r[2]} |")
PY

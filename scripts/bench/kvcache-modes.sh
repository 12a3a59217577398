#!/usr/bin/env bash
# The KV-cache transfer's layout cost on this host, in one railbench run per repetition:
# Llama-3.1-70B, 4,096 tokens (1.34 GB per request), 2 ranks, ofi:shm, the per-block,
# coalesced and staged modes and one contiguous write of the same bytes between the
# same registered buffers. Prints, per mode, the medians over REPS runs of the p50
# request time, GB/s and the ratio to the contiguous write (target: per-block >= 0.8).
#   scripts/bench/kvcache-modes.sh [REPS]     (env: MODEL, TOKENS, REQUESTS, TRANSPORT, EXTRA)
# Over ofi, each repetition also runs the provider's own per-block cost, written straight
# against libfabric (build/fi_reference oneway ... write BLOCK 4): the same bytes as one
# request, as one write and as blocks four to a fi_writemsg (the provider's iovec limit
# on shm, and how railbench packs them), so the two ratios can be set side by side.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/lib/mpirun.sh"
reps=${1:-3}
model=${MODEL:-llama-3.1-70b}
tokens=${TOKENS:-4096}
requests=${REQUESTS:-8}
transport=${TRANSPORT:-ofi:shm}
build=${RAILBENCH_BUILD_DIR:-$root/build}
[[ -x $build/railbench ]] || "$root/scripts/build.sh" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "# kvcache-modes: $(nproc) cores, 2 ranks, $transport, $model, $tokens tokens, $requests requests per mode, median of $reps runs"
for ((r = 0; r < reps; ++r)); do
  # shellcheck disable=SC2086
  rb_mpirun 2 "$build/railbench" kvcache -t "$transport" --model "$model" --tokens "$tokens" \
    --mode per-block,coalesced,staged --requests "$requests" ${EXTRA:-} --json "$work/r$r.json" >"$work/r$r.txt"
  if [[ $transport == ofi:* && -x $build/fi_reference ]]; then
    read -r bytes block < <(python3 -c '
import json, sys
r = next(x for x in json.load(open(sys.argv[1]))["results"] if x["mode"] == "per-block")
print(r["bytes"], r["bytes"] // r["blocks"])' "$work/r$r.json")
    for piece in 0 "$block"; do
      rb_mpirun 2 "$build/fi_reference" oneway "${transport#ofi:}" "$bytes" "$bytes" 1 "$requests" 2 write \
        "$piece" 4 >"$work/fi_${piece}_$r.txt"
    done
    echo "$block" >"$work/block"
  fi
  echo "# run $((r + 1)) of $reps done"
done
python3 - "$work" "$reps" <<'PY'
import json, os, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
by_mode = {}
for r in range(reps):
    doc = json.load(open(f"{work}/r{r}.json"))
    for res in doc["results"]:
        by_mode.setdefault(res["mode"], []).append(res)
print(f"# {'mode':>11} {'writes':>7} {'p50 (ms)':>9} {'GB/s':>7} {'vs 1 write':>11}   (ratios of each run)")
for mode in ("contiguous", "per-block", "coalesced", "staged"):
    runs = by_mode.get(mode, [])
    if not runs:
        continue
    med = lambda k: statistics.median(x[k] for x in runs)
    ratios = " ".join(f"{x['ratio_to_contiguous']:.2f}" for x in runs)
    print(f"  {mode:>11} {runs[0]['ops']:>7} {statistics.median(x['request_us']['p50'] for x in runs) / 1e3:>9.1f} "
          f"{med('gbps'):>7.3f} {med('ratio_to_contiguous'):>11.2f}   ({ratios})")
pb = by_mode.get("per-block", [])
if pb:
    ratio = statistics.median(x["ratio_to_contiguous"] for x in pb)
    print(f"# per-block / contiguous: {ratio:.2f} (target >= 0.80: {'met' if ratio >= 0.8 else 'NOT met'})")
if os.path.exists(f"{work}/block"):
    block = int(open(f"{work}/block").read())
    def gbps(piece, r):  # fi_reference's last line: bytes time_us algbw busbw busbw_p50
        return float(open(f"{work}/fi_{piece}_{r}.txt").read().split()[-1])
    whole = [gbps(0, r) for r in range(reps)]
    blocks = [gbps(block, r) for r in range(reps)]
    ratios = [b / w for b, w in zip(blocks, whole)]
    print(f"# raw libfabric, same bytes: one write {statistics.median(whole):.3f} GB/s, {block} B blocks 4 per "
          f"fi_writemsg {statistics.median(blocks):.3f} GB/s: the provider's own per-block / contiguous "
          f"{statistics.median(ratios):.2f} (" + " ".join(f"{x:.2f}" for x in ratios) + ")")
PY

#!/usr/bin/env bash
# Half-precision all-reduce against f32 on this host, in one run: the same ranks, sizes
# and iterations over ofi:shm, for -d f32, f16 and bf16, alternating, repeated REPS
# times; prints each type's median busbw per size and its ratio to f32 (target: f16 and
# bf16 >= 0.8x f32 from 16M up). What it measures is the reduction's cost: the bytes
# moved per element are halved, so a ratio near 1 means converting costs no more than
# the link saves.
#   scripts/bench/half-precision.sh [REPS]      (env: RANKS (8), MIN (16M), MAX (64M), ITERS (10))
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/lib/mpirun.sh"
reps=${1:-3}
ranks=${RANKS:-8}
min=${MIN:-16M}
max=${MAX:-64M}
iters=${ITERS:-10}
build=${RAILBENCH_BUILD_DIR:-$root/build}
[[ -x $build/railbench ]] || "$root/scripts/build.sh" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "# half-precision: $(nproc) cores, $ranks ranks, ofi:shm, allreduce sum, $iters iterations + 2 warm-up, median of $reps runs"
for ((r = 0; r < reps; ++r)); do
  for t in f32 f16 bf16; do
    rb_mpirun "$ranks" "$build/railbench" allreduce -t ofi:shm -d "$t" -b "$min" -e "$max" -f 2 -n "$iters" -w 2 \
      --quiet --json "$work/$t.$r.json" >/dev/null
  done
done
python3 - "$work" "$reps" <<'PY'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
busbw = {}
for t in ("f32", "f16", "bf16"):
    for r in range(reps):
        for e in json.load(open(f"{work}/{t}.{r}.json"))["results"]:
            busbw.setdefault((t, e["bytes"]), []).append(e["out_of_place"]["busbw_gbps"])
sizes = sorted({b for (_, b) in busbw})
print(f"{'bytes':>12} {'f32 GB/s':>9} {'f16 GB/s':>9} {'bf16 GB/s':>9} {'f16/f32':>8} {'bf16/f32':>9}")
for b in sizes:
    m = {t: statistics.median(busbw[(t, b)]) for t in ("f32", "f16", "bf16")}
    print(f"{b:>12} {m['f32']:>9.3f} {m['f16']:>9.3f} {m['bf16']:>9.3f} {m['f16'] / m['f32']:>8.2f} {m['bf16'] / m['f32']:>9.2f}")
PY

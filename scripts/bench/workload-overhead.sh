#!/usr/bin/env bash
# What railbench workload's executor adds: a trace of one all-reduce per step on the
# whole world against `railbench allreduce --algo ring` of the same size, alternating
# the two, REPS times each, on this host over libfabric (shm by default). Prints per
# size the medians of the workload's step p50 and allreduce's out-of-place time p50,
# and their ratio (goal: within 1.05).
#
#   scripts/bench/workload-overhead.sh [REPS]      NP=2 PROV=shm SIZES="1M 16M"
set -euo pipefail
reps=${1:-3}
np=${NP:-2}
prov=${PROV:-shm}
sizes=${SIZES:-1M 16M}
root=$(cd "$(dirname "$0")/../.." && pwd)
rb=${RAILBENCH:-$root/build/railbench}
[[ -x $rb ]] || { echo "workload-overhead: no $rb: build first (scripts/test.sh or cmake)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpi=(mpirun -np "$np" --oversubscribe)
[[ $(id -u) == 0 ]] && mpi+=(--allow-run-as-root)
rails=()
[[ $prov == tcp ]] && rails=(--rails lo)

to_bytes() { numfmt --from=iec "$1"; }

# One all_reduce of BYTES on a group of every rank, as the step.
make_trace() {
  python3 - "$1" "$np" "$2" <<'PY'
import json, sys
out, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ops = [{"op": "all_reduce", "group": "world", "bytes": size, "kind": "dp"}]
json.dump({"format": "railbench-workload-trace", "version": 1, "world": n, "dtype": "f32",
           "groups": [{"name": "world", "kind": "dp", "ranks": list(range(n))}],
           "ranks": [ops for _ in range(n)]}, open(out, "w"))
PY
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

printf '%-8s %14s %14s %8s\n' size workload_us allreduce_us ratio
for size in $sizes; do
  bytes=$(to_bytes "$size")
  make_trace "$tmp/t.json" "$bytes"
  : >"$tmp/w" && : >"$tmp/a"
  for ((r = 0; r < reps; r++)); do
    "${mpi[@]}" "$rb" workload -t "ofi:$prov" "${rails[@]}" --trace "$tmp/t.json" -n 50 -w 5 -q --json "$tmp/w.json" >/dev/null
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['step_us']['p50'])" "$tmp/w.json" >>"$tmp/w"
    "${mpi[@]}" "$rb" allreduce -t "ofi:$prov" "${rails[@]}" --algo ring -d f32 -b "$bytes" -e "$bytes" -n 50 -w 5 -q \
      --json "$tmp/a.json" >/dev/null
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][0]['out_of_place']['iteration_us']['p50'])" \
      "$tmp/a.json" >>"$tmp/a"
  done
  w=$(median <"$tmp/w")
  a=$(median <"$tmp/a")
  printf '%-8s %14.1f %14.1f %8.3f\n' "$size" "$w" "$a" "$(awk -v w="$w" -v a="$a" 'BEGIN {print w / a}')"
done

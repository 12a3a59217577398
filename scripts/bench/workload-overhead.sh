#!/usr/bin/env bash
# What railbench workload's executor adds: a trace of one all-reduce per step on the
# whole world against `railbench allreduce --algo ring` of the same size, alternating
# them, REPS times each, on this host over libfabric (shm by default). Prints per size
# the medians of the workload's step p50 (as it runs by default, with straggler
# recording, and with --no-stragglers) and of allreduce's out-of-place time p50, and
# the ratios: `ratio` the default run's, `exec_ratio` the executor's alone (goal: both
# within 1.05).
#
#   scripts/bench/workload-overhead.sh [REPS]      NP=2 PROV=shm SIZES="1M 16M" ITERS=50
#   SU=1 scripts/bench/workload-overhead.sh [REPS] the same across the simulated SU that
#       scripts/netns-su/up.sh built (NP=8: every slot of 4 nodes x 2 rails, ofi:tcp on
#       rail0,rail1; SIZES="1M 4M" ITERS=20 by default, as its links run at 400 Mb/s)
#   SLICE=64K scripts/bench/workload-overhead.sh   both tools with --slice-bytes 64K (each
#       tool's own default otherwise: the workload's 1M, allreduce's 16M)
set -euo pipefail
reps=${1:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
rb=${RAILBENCH:-$root/build/railbench}
[[ -x $rb ]] || { echo "workload-overhead: no $rb: build first (scripts/test.sh or cmake)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ ${SU:-0} == 1 ]]; then
  np=${NP:-8} prov=tcp sizes=${SIZES:-1M 4M} iters=${ITERS:-20}
  mpi=("$root/scripts/netns-su/mpirun.sh" --)
  rails=(--rails rail0,rail1)
else
  np=${NP:-2} prov=${PROV:-shm} sizes=${SIZES:-1M 16M} iters=${ITERS:-50}
  mpi=(mpirun -np "$np" --oversubscribe)
  [[ $(id -u) == 0 ]] && mpi+=(--allow-run-as-root)
  rails=()
  [[ $prov == tcp ]] && rails=(--rails lo)
fi

slice=()
[[ -n ${SLICE:-} ]] && slice=(--slice-bytes "$SLICE")

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

# Three per rep, alternating: the workload as it runs by default (straggler recording
# on), the workload with --no-stragglers (the executor alone), and the all-reduce.
step_p50() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['step_us']['p50'])" "$1"; }
printf '%-8s %14s %14s %14s %10s %10s\n' size workload_us no_record_us allreduce_us ratio exec_ratio
for size in $sizes; do
  bytes=$(to_bytes "$size")
  make_trace "$tmp/t.json" "$bytes"
  : >"$tmp/w" && : >"$tmp/x" && : >"$tmp/a"
  for ((r = 0; r < reps; r++)); do
    "${mpi[@]}" "$rb" workload -t "ofi:$prov" "${rails[@]}" --trace "$tmp/t.json" "${slice[@]}" -n "$iters" -w 5 -q --json "$tmp/w.json" >/dev/null
    step_p50 "$tmp/w.json" >>"$tmp/w"
    "${mpi[@]}" "$rb" workload -t "ofi:$prov" "${rails[@]}" --trace "$tmp/t.json" "${slice[@]}" -n "$iters" -w 5 -q --no-stragglers \
      --json "$tmp/x.json" >/dev/null
    step_p50 "$tmp/x.json" >>"$tmp/x"
    "${mpi[@]}" "$rb" allreduce -t "ofi:$prov" "${rails[@]}" --algo ring "${slice[@]}" -d f32 -b "$bytes" -e "$bytes" -n "$iters" -w 5 -q \
      --json "$tmp/a.json" >/dev/null
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][0]['out_of_place']['iteration_us']['p50'])" \
      "$tmp/a.json" >>"$tmp/a"
  done
  w=$(median <"$tmp/w")
  x=$(median <"$tmp/x")
  a=$(median <"$tmp/a")
  printf '%-8s %14.1f %14.1f %14.1f %10.3f %10.3f\n' "$size" "$w" "$x" "$a" "$(awk -v w="$w" -v a="$a" 'BEGIN {print w / a}')" \
    "$(awk -v x="$x" -v a="$a" 'BEGIN {print x / a}')"
done

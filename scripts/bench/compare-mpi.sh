#!/usr/bin/env bash
# railbench vs Open MPI on this host, in one run: 2 ranks, same sizes, same iteration
# counts, same timing definition (bench/reference/mpi_reference.c). For all-reduce,
# all-gather, reduce-scatter and all-to-all (MPI_Allreduce, MPI_Allgather,
# MPI_Reduce_scatter_block, MPI_Alltoall) prints the busbw ratio per size (target
# >= 1.0 from 1M up),
# then send/recv bandwidth at 4M against memcpy (the one-copy limit) and libfabric's
# fi_pingpong over shm.
#
# Each measurement is repeated REPS times, alternating railbench and its peer, and the
# median is reported: the machine is shared and noisy.
#   scripts/bench/compare-mpi.sh [REPS]      (env: COLLECTIVES, ITERS, WARMUP, MIN, MAX)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/lib/mpirun.sh"
reps=${1:-3}
iters=${ITERS:-20}
warmup=${WARMUP:-5}
min=${MIN:-65536}
max=${MAX:-67108864}
build=${RAILBENCH_BUILD_DIR:-$root/build}
[[ -x $build/railbench && -x $build/mpi_reference ]] || "$root/scripts/build.sh" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "# compare-mpi: $(nproc) cores, 2 ranks, ofi:shm vs Open MPI $(mpirun --version | head -1 | awk '{print $NF}'), ${iters} iterations + ${warmup} warm-up, median of ${reps} runs"
collectives=${COLLECTIVES:-allreduce allgather reducescatter alltoall}
for coll in $collectives; do
for ((r = 0; r < reps; ++r)); do
  rb_mpirun 2 "$build/railbench" "$coll" -t ofi:shm -b "$min" -e "$max" -f 2 -n "$iters" -w "$warmup" \
    --json "$work/rb$r.json" >/dev/null
  rb_mpirun 2 "$build/mpi_reference" "$coll" "$min" "$max" 2 "$iters" "$warmup" >"$work/mpi$r.txt"
done

echo
echo "## $coll"
python3 - "$work" "$reps" <<'PY'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
rb, mpi = {}, {}
for r in range(reps):
    for res in json.load(open(f"{work}/rb{r}.json"))["results"]:
        rb.setdefault(res["bytes"], []).append(res["out_of_place"]["busbw_gbps"])
    for line in open(f"{work}/mpi{r}.txt"):
        b, t, alg, bus = line.split()
        mpi.setdefault(int(b), []).append(float(bus))
print(f"{'size':>10} {'railbench busbw':>16} {'Open MPI busbw':>20} {'ratio':>7}  target")
ratios = []
for size in sorted(rb):
    a, m = statistics.median(rb[size]), statistics.median(mpi.get(size, [0]))
    ratio = a / m if m else 0
    target = ">= 1.0" if size >= 1 << 20 else ""
    if size >= 1 << 20:
        ratios.append(ratio)
    print(f"{size:>10} {a:>16.3f} {m:>20.3f} {ratio:>7.2f}  {target}")
if ratios:
    print(f"# busbw ratio from 1M up: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}")
PY
done

echo
echo "# send/recv bandwidth at 4M (GB/s = 1e9 B/s), median of ${reps} runs"
size=4194304
for ((r = 0; r < reps; ++r)); do
  rb_mpirun 2 "$build/railbench" sendrecv -t ofi:shm -b $size -e $size -n 50 -w 5 --bw-iters 20 \
    --json "$work/sr$r.json" >/dev/null
  "$build/mpi_reference" memcpy $size 200 >"$work/memcpy$r.txt"
  port=$((40000 + RANDOM % 20000))
  timeout 60 fi_pingpong -p shm -e rdm -S $size -I 200 -B "$port" >"$work/pp_server$r.txt" 2>&1 &
  sleep 0.5
  timeout 60 fi_pingpong -p shm -e rdm -S $size -I 200 -P "$port" 127.0.0.1 >"$work/pp$r.txt" 2>&1 || true
  wait || true
done
python3 - "$work" "$reps" <<'PY'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
rb, mc, pp = [], [], []
for r in range(reps):
    pair = json.load(open(f"{work}/sr{r}.json"))["results"][0]["pairs"][0]
    rb.append(statistics.median([pair["bw_ab_gbps"]["p50"], pair["bw_ba_gbps"]["p50"]]))
    mc.append(float(open(f"{work}/memcpy{r}.txt").read().split()[2]))
    for line in open(f"{work}/pp{r}.txt"):
        f = line.split()
        if f and f[0] in ("4194304", "4m"):
            pp.append(float(f[5]) / 1000.0)  # fi_pingpong prints MB/sec (1e6 B/s)
rb_m, mc_m = statistics.median(rb), statistics.median(mc)
print(f"railbench sendrecv (unidirectional, median window): {rb_m:.3f} GB/s")
print(f"memcpy 4M on this host:                             {mc_m:.3f} GB/s   ratio {rb_m / mc_m:.2f}  (target >= 0.9)")
if pp:
    pp_m = statistics.median(pp)
    print(f"fi_pingpong -p shm 4M:                              {pp_m:.3f} GB/s   ratio {rb_m / pp_m:.2f}  (target >= 1.0)")
    print(f"(fi_pingpong / memcpy: {pp_m / mc_m:.2f})")
else:
    print("fi_pingpong produced no 4M line (see its output); ratio not available")
PY

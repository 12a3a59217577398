#!/usr/bin/env bash
# railbench vs Open MPI on this host, in one run: 2 ranks, same sizes, same iteration
# counts, same timing definition (bench/reference/mpi_reference.c). For all-reduce,
# all-gather, reduce-scatter and all-to-all (MPI_Allreduce, MPI_Allgather,
# MPI_Reduce_scatter_block, MPI_Alltoall) prints the busbw ratio per size (target
# >= 1.0 from 1M up). All-gather and all-to-all get a third column: the same exchange
# written straight against libfabric (bench/reference/fi_reference.c), which tells the
# provider's limit from railbench's own overhead. Open MPI over UCX (--mca pml ucx, on
# UCX's shared memory or its tcp on lo, as PROVIDER says) is a second MPI column where
# this Open MPI has pml ucx (ompi_info); where it has none the script says so and skips it.
# Open MPI over libfabric (--mca pml cm --mca mtl ofi, the same provider as railbench's:
# shm, or tcp;ofi_rxm) is a third, where this Open MPI has mtl ofi.
# Then send/recv bandwidth at 4M against memcpy (the one-copy limit) and libfabric's
# fi_pingpong.
#
# Each measurement is repeated REPS times, alternating railbench and its peers, and the
# median is reported: the machine is shared and noisy.
#   scripts/bench/compare-mpi.sh [REPS]
#   env: COLLECTIVES, ITERS, WARMUP, MIN, MAX;
#        PROVIDER=shm (default: ofi:shm vs Open MPI's vader) or tcp (ofi:tcp vs Open MPI
#        with --mca btl self,tcp vs libfabric tcp;ofi_rxm);
#        TRANSPORT=ucx:shm (with PROVIDER=shm) or ucx:tcp (with PROVIDER=tcp): railbench
#        over UCX, to be read against the Open MPI + UCX column (same UCX_TLS). Its
#        endpoints run as pml ucx's do, without peer-failure handling
#        (RAILBENCH_UCX_PEER_FAILURE=off; UCX_PEER_FAILURE=on keeps railbench's default);
#        FI_MODE=send|write, FI_MSG=BYTES: the raw-libfabric variant (default: tagged
#        send/recv cut as railbench cuts it); SENDRECV=0 skips the send/recv part.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/lib/mpirun.sh"
reps=${1:-3}
iters=${ITERS:-20}
warmup=${WARMUP:-5}
min=${MIN:-65536}
max=${MAX:-67108864}
build=${RAILBENCH_BUILD_DIR:-$root/build}
provider=${PROVIDER:-shm}
case $provider in
  shm) transport=ofi:shm fi_provider=shm mpi_btl=self,vader,tcp ucx_env=(-x UCX_TLS=self,shm) ;;
  tcp) transport=ofi:tcp fi_provider="tcp;ofi_rxm" mpi_btl=self,tcp ucx_env=(-x UCX_TLS=self,tcp -x UCX_NET_DEVICES=lo) ;;
  *)
    echo "PROVIDER=$provider: shm or tcp" >&2
    exit 2
    ;;
esac
transport=${TRANSPORT:-$transport}
case $transport in
  "ofi:$provider" | "ucx:$provider") ;;
  *)
    echo "TRANSPORT=$transport with PROVIDER=$provider: ofi:$provider or ucx:$provider (the same path as the peers')" >&2
    exit 2
    ;;
esac
rb_env=()
if [[ $transport == ucx:* ]]; then
  rb_env=(-x "RAILBENCH_UCX_PEER_FAILURE=${UCX_PEER_FAILURE:-off}")
fi
fi_mode=${FI_MODE:-send}
[[ -x $build/railbench && -x $build/mpi_reference && -x $build/fi_reference ]] || "$root/scripts/build.sh" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ompi_info 2>/dev/null | grep -E 'MCA pml: ucx' >/dev/null; then
  mpi_ucx=1
else
  mpi_ucx=0
  echo "# compare-mpi: this Open MPI has no pml ucx (ompi_info lists none): the Open MPI + UCX column is skipped"
fi
if ompi_info 2>/dev/null | grep -E 'MCA mtl: ofi' >/dev/null; then
  mpi_ofi=1
else
  mpi_ofi=0
  echo "# compare-mpi: this Open MPI has no mtl ofi (ompi_info lists none): the Open MPI + libfabric column is skipped"
fi
# Open MPI over libfabric: the cm PML with the ofi MTL, held to railbench's provider.
ofi_mpirun() {
  local -a extra=()
  [[ $(id -u) -eq 0 ]] && extra+=(--allow-run-as-root)
  mpirun -np 2 "${extra[@]}" --bind-to none --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$fi_provider" \
    --mca btl self --mca oob_tcp_if_include lo -x FI_TCP_IFACE=lo "$@" </dev/null
}
# Open MPI over UCX: its own mpirun line, since rb_mpirun pins --mca pml ob1 and Open MPI
# keeps the first --mca pml it is given. pml ucx takes only Mellanox devices and verbs
# transports unless told otherwise (pml_ucx_devices mlx*): "any" lets it run on shm and tcp.
ucx_mpirun() {
  local -a extra=()
  [[ $(id -u) -eq 0 ]] && extra+=(--allow-run-as-root)
  mpirun -np 2 "${extra[@]}" --bind-to none --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
    --mca osc ucx --mca btl self --mca oob_tcp_if_include lo "${ucx_env[@]}" "$@" </dev/null
}

echo "# compare-mpi: $(nproc) cores, 2 ranks, $transport${rb_env:+ (${rb_env[1]})} vs Open MPI $(mpirun --version | head -1 | awk '{print $NF}') (btl $mpi_btl$( ((mpi_ucx)) && echo "; and pml ucx, ${ucx_env[*]}")$( ((mpi_ofi)) && echo "; and mtl ofi, $fi_provider")) vs libfabric $fi_provider ($fi_mode), ${iters} iterations + ${warmup} warm-up, median of ${reps} runs, load $(cut -d' ' -f1-3 /proc/loadavg)"
collectives=${COLLECTIVES:-allreduce allgather reducescatter alltoall}
for coll in $collectives; do
  # What railbench posts with 2 ranks: the ring cuts a block into 16 MiB slices
  # (--slice-bytes), all-to-all sends it whole.
  case $coll in
    allgather) fi_msg=${FI_MSG:-16777216} ;;
    alltoall) fi_msg=${FI_MSG:-0} ;;
    *) fi_msg= ;;
  esac
  rm -f "$work"/fi*.txt "$work"/ucx*.txt "$work"/mof*.txt  # a collective without the raw column must not show the last one's
  for ((r = 0; r < reps; ++r)); do
    rb_mpirun 2 "${rb_env[@]}" "$build/railbench" "$coll" -t "$transport" -b "$min" -e "$max" -f 2 -n "$iters" -w "$warmup" \
      --json "$work/rb$r.json" >/dev/null
    RB_MPI_BTL=$mpi_btl rb_mpirun 2 "$build/mpi_reference" "$coll" "$min" "$max" 2 "$iters" "$warmup" \
      >"$work/mpi$r.txt"
    if ((mpi_ucx)); then
      ucx_mpirun "$build/mpi_reference" "$coll" "$min" "$max" 2 "$iters" "$warmup" >"$work/ucx$r.txt"
    fi
    if ((mpi_ofi)); then
      ofi_mpirun "$build/mpi_reference" "$coll" "$min" "$max" 2 "$iters" "$warmup" >"$work/mof$r.txt"
    fi
    if [[ -n $fi_msg ]]; then
      rb_mpirun 2 "$build/fi_reference" "$coll" "$fi_provider" "$min" "$max" 2 "$iters" "$warmup" "$fi_mode" \
        "$fi_msg" >"$work/fi$r.txt"
    fi
  done

  echo
  echo "## $coll"
  python3 - "$work" "$reps" <<'PY'
import json, os, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
# tool -> size -> [busbw per run], and the same at the median iteration (p50)
mean = {"rb": {}, "mpi": {}, "fi": {}, "ucx": {}, "mof": {}}
p50 = {"rb": {}, "mpi": {}, "fi": {}, "ucx": {}, "mof": {}}
def read_table(path, tool):
    for line in open(path):
        f = line.split()
        mean[tool].setdefault(int(f[0]), []).append(float(f[3]))
        p50[tool].setdefault(int(f[0]), []).append(float(f[4]))
for r in range(reps):
    for res in json.load(open(f"{work}/rb{r}.json"))["results"]:
        side = res["out_of_place"]
        mean["rb"].setdefault(res["bytes"], []).append(side["busbw_gbps"])
        p50["rb"].setdefault(res["bytes"], []).append(side["busbw_gbps"] * side["time_us"] / side["iteration_us"]["p50"])
    read_table(f"{work}/mpi{r}.txt", "mpi")
    if os.path.exists(f"{work}/fi{r}.txt"):
        read_table(f"{work}/fi{r}.txt", "fi")
    if os.path.exists(f"{work}/ucx{r}.txt"):
        read_table(f"{work}/ucx{r}.txt", "ucx")
    if os.path.exists(f"{work}/mof{r}.txt"):
        read_table(f"{work}/mof{r}.txt", "mof")
fi = bool(mean["fi"])
ucx = bool(mean["ucx"])
mof = bool(mean["mof"])
med = lambda d, s: statistics.median(d[s]) if d.get(s) else 0
div = lambda a, b: a / b if b else 0
def ratios(d, s):
    a, m, f = med(d["rb"], s), med(d["mpi"], s), med(d["fi"], s)
    out = f" {div(a, m):>6.2f}"
    if fi:
        out += f" {div(f, m):>6.2f} {div(a, f):>6.2f}"
    if ucx:
        out += f" {div(a, med(d['ucx'], s)):>6.2f}"
    if mof:
        out += f" {div(a, med(d['mof'], s)):>6.2f}"
    return out
names = " rb/MPI" + (" fi/MPI  rb/fi" if fi else "") + (" rb/MPIucx" if ucx else "") + (" rb/MPIofi" if mof else "")
print(f"{'size':>10} {'railbench':>10} {'Open MPI':>10}" + (f" {'libfabric':>10}" if fi else "") +
      (f" {'MPI+ucx':>10}" if ucx else "") + (f" {'MPI+ofi':>10}" if mof else "") + names + "  |" + names + "  (at the median iteration)")
low = []
for size in sorted(mean["rb"]):
    line = f"{size:>10} {med(mean['rb'], size):>10.3f} {med(mean['mpi'], size):>10.3f}"
    if fi:
        line += f" {med(mean['fi'], size):>10.3f}"
    if ucx:
        line += f" {med(mean['ucx'], size):>10.3f}"
    if mof:
        line += f" {med(mean['mof'], size):>10.3f}"
    print(line + ratios(mean, size) + "  |" + ratios(p50, size))
    if size >= 1 << 20:
        low.append(div(med(mean["rb"], size), med(mean["mpi"], size)))
print("# busbw GB/s, mean iteration time as nccl-tests; target rb/MPI >= 1.0 from 1M")
if low:
    print(f"# railbench / Open MPI from 1M up: min {min(low):.2f}, median {statistics.median(low):.2f}")
low_ucx = [div(med(mean["rb"], s), med(mean["ucx"], s)) for s in sorted(mean["rb"]) if s >= 1 << 20 and ucx]
if low_ucx:
    print(f"# railbench / Open MPI over pml ucx from 1M up: min {min(low_ucx):.2f}, "
          f"median {statistics.median(low_ucx):.2f}")
low_mof = [div(med(mean["rb"], s), med(mean["mof"], s)) for s in sorted(mean["rb"]) if s >= 1 << 20 and mof]
if low_mof:
    print(f"# railbench / Open MPI over mtl ofi from 1M up: min {min(low_mof):.2f}, "
          f"median {statistics.median(low_mof):.2f}")
PY
done

[[ ${SENDRECV:-1} == 0 ]] && exit 0
echo
echo "# send/recv bandwidth at 4M over $transport (GB/s = 1e9 B/s), median of ${reps} runs"
size=4194304
for ((r = 0; r < reps; ++r)); do
  rb_mpirun 2 "${rb_env[@]}" "$build/railbench" sendrecv -t "$transport" -b $size -e $size -n 50 -w 5 --bw-iters 20 \
    --json "$work/sr$r.json" >/dev/null
  "$build/mpi_reference" memcpy $size 200 >"$work/memcpy$r.txt"
  port=$((40000 + RANDOM % 20000))
  timeout 60 fi_pingpong -p "$fi_provider" -e rdm -S $size -I 200 -B "$port" >"$work/pp_server$r.txt" 2>&1 &
  sleep 0.5
  timeout 60 fi_pingpong -p "$fi_provider" -e rdm -S $size -I 200 -P "$port" 127.0.0.1 >"$work/pp$r.txt" 2>&1 || true
  wait || true
done
python3 - "$work" "$reps" "$fi_provider" <<'PY'
import json, statistics, sys
work, reps, prov = sys.argv[1], int(sys.argv[2]), sys.argv[3]
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
    print(f"fi_pingpong -p {prov} 4M:".ljust(52) + f"{pp_m:.3f} GB/s   ratio {rb_m / pp_m:.2f}  (target >= 1.0)")
    print(f"(fi_pingpong / memcpy: {pp_m / mc_m:.2f})")
else:
    print("fi_pingpong produced no 4M line (see its output); ratio not available")
PY

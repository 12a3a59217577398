#!/usr/bin/env bash
# Where a 2-rank collective's time goes over libfabric shm: perf samples every rank of
# railbench, of the same exchange written straight against libfabric
# (bench/reference/fi_reference.c) and of Open MPI, at one size, and sorts the samples
# into the provider's copy (the kernel's process_vm_readv, CMA), local memcpy, polling
# and locks, railbench's own code and the rest. Then, in a second run, each rank's
# process_vm_readv/writev and sched_yield calls with their times (perf trace -s; not
# strace, whose ptrace changes what it counts): who copies, how often, and how long one
# copy of a block takes.
#   scripts/bench/profile-shm.sh [COLLECTIVE] [BYTES]   (allgather 16M by default)
#   COLLECTIVE oneway: rank 0 sends BYTES to rank 1 and nothing else, libfabric and Open
#   MPI only: the copy alone, without the other direction's copy beside it.
#   env: ITERS (200), FI_MODE (send|write)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/lib/mpirun.sh"
coll=${1:-allgather}
bytes=${2:-16777216}
iters=${ITERS:-200}
fi_mode=${FI_MODE:-send}
build=${RAILBENCH_BUILD_DIR:-$root/build}
command -v perf >/dev/null || {
  echo "perf is missing (apt-get install linux-perf)" >&2
  exit 2
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One perf file per rank; the first half second (MPI start-up) is left out. railbench
# times each size out of place and in place, so it makes twice the calls.
cat >"$work/perf-rank.sh" <<'SH'
#!/usr/bin/env bash
out=$1
shift
exec perf record -q -D 500 -F 4000 -o "$out.$OMPI_COMM_WORLD_RANK.data" -- "$@"
SH
cat >"$work/count-rank.sh" <<'SH'
#!/usr/bin/env bash
out=$1
shift
exec perf trace -s -e process_vm_readv,process_vm_writev,sched_yield -o "$out.$OMPI_COMM_WORLD_RANK.txt" -- "$@"
SH
chmod +x "$work"/*.sh
slice=16777216
[[ $coll == alltoall ]] && slice=0
declare -A cmd=(
  [railbench]="$build/railbench $coll -t ofi:shm -b $bytes -e $bytes -n $iters -w 5"
  [libfabric]="$build/fi_reference $coll shm $bytes $bytes 1 $iters 5 $fi_mode $slice"
  [openmpi]="$build/mpi_reference $coll $bytes $bytes 1 $iters 5"
)
echo "# profile-shm: $coll $bytes B, 2 ranks, $iters iterations, load $(cut -d' ' -f1-3 /proc/loadavg)"
tools=(railbench libfabric openmpi)
[[ $coll == oneway ]] && tools=(libfabric openmpi)
for tool in "${tools[@]}"; do
  # shellcheck disable=SC2086 # the command lines above are meant to split
  rb_mpirun 2 "$work/perf-rank.sh" "$work/$tool" ${cmd[$tool]} >/dev/null
  for rank in 0 1; do
    perf report -i "$work/$tool.$rank.data" --stdio --no-children -g none --sort dso,sym --percent-limit 0 \
      2>/dev/null >"$work/$tool.$rank.txt"
  done
  # shellcheck disable=SC2086
  rb_mpirun 2 "$work/count-rank.sh" "$work/$tool-calls" ${cmd[$tool]} >/dev/null
done
python3 - "$work" "${tools[@]}" <<'PY'
import re, sys
work, tools = sys.argv[1], sys.argv[2:]
# Kernel symbols of the CMA copy: page pinning and the copy itself.
cma = re.compile(r"copy_to_iter|copy_from_iter|copy_user|follow_page|pin_user_pages|unpin_user|gup_|"
                 r"process_vm|__get_user_pages|try_grab|memcpy_orig|rep_movs|__pi_memcpy")
def bucket(dso, sym):
    if dso.startswith("[kernel"):
        return "CMA copy (kernel)" if cma.search(sym) else "kernel, other"
    if "libc" in dso and re.search(r"mem(move|cpy)", sym):
        return "memcpy (libc)"
    if "libc" in dso and "pthread" in sym:
        return "pthread locks"
    if "libfabric" in dso:
        return "libfabric (progress, polling)"
    if dso in ("railbench", "fi_reference", "mpi_reference"):
        return "the benchmark's own code"
    if re.match(r"(libopen-|libmpi|mca_)", dso):
        return "Open MPI (progress, vader)"
    return "other"
order = ["CMA copy (kernel)", "memcpy (libc)", "libfabric (progress, polling)", "pthread locks",
         "the benchmark's own code", "Open MPI (progress, vader)", "kernel, other", "other"]
for tool in tools:
    print(f"\n## {tool}: % of samples, rank 0 / rank 1")
    shares = []
    for rank in (0, 1):
        b = {}
        for line in open(f"{work}/{tool}.{rank}.txt"):
            m = re.match(r"\s+([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*)", line)
            if m:
                k = bucket(m.group(2), m.group(3).strip())
                b[k] = b.get(k, 0) + float(m.group(1))
        shares.append(b)
    for k in order:
        if any(s.get(k, 0) >= 0.5 for s in shares):
            print(f"  {k:<32} {shares[0].get(k, 0):5.1f} / {shares[1].get(k, 0):5.1f}")
    for rank in (0, 1):
        calls = []
        for line in open(f"{work}/{tool}-calls.{rank}.txt"):
            f = line.split()
            if len(f) >= 7 and f[0] in ("process_vm_readv", "process_vm_writev", "sched_yield"):
                calls.append(f"{f[1]} {f[0]}" + (f" (min {f[4]} ms, avg {f[5]} ms)" if f[0] != "sched_yield" else ""))
        print(f"  rank {rank}: " + ", ".join(calls))
PY

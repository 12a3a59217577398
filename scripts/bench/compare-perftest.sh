#!/usr/bin/env bash
# railbench vs perftest over the same soft-RoCE device, inside ONE VM boot
# (scripts/rxe-vm/run.sh): perftest's ib_write_lat at 8 B and ib_write_bw at 64K and
# 1M, against railbench sendrecv --verb write with 2 ranks on the same device, with
# the same sizes and message counts. Each measurement is repeated REPS times,
# alternating the two tools, and medians are compared.
#   scripts/bench/compare-perftest.sh [REPS]        (default 3)
# Targets: bandwidth >= 0.95x ib_write_bw at 64K and 1M; p50 latency <= 1.10x
# ib_write_lat's typical (median) latency at 8 B. p99 and p99.9 are shown side by side.
# rxe under TCG emulation is slow (tens of MB/s): the ratios are what matter.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
reps=${1:-3}

if [[ ${1-} != --inside ]]; then
  build=${RAILBENCH_BUILD_DIR:-$root/build}
  [[ -x $build/railbench ]] || "$root/scripts/build.sh" >/dev/null
  out=$(mktemp -d)
  RAILBENCH_BUILD_DIR=$build "$root/scripts/rxe-vm/run.sh" --rails 1 --out "$out" --timeout 1500 \
    --share "$root" --share "$build" -- \
    "$root/scripts/bench/compare-perftest.sh" --inside "$reps"
  exit $?
fi

# ---- inside the VM ----
reps=${2:-3}
source "$root/scripts/lib/mpirun.sh"
rb=${RAILBENCH_BUILD_DIR:-$root/build}/railbench
dev=rxe0
ip=$(ip -4 -o addr show eth0 | awk '{split($4, a, "/"); print a[1]}')
work=/out
lat_iters=1000
# size message-count tx-depth: ib_write_bw keeps tx-depth writes in flight for
# message-count writes; railbench sends message-count / tx-depth windows of tx-depth.
bw_cases=("65536 2048 128" "1048576 256 32")

perftest() {  # perftest TOOL ARGS... : server and client on the same device
  local tool=$1
  shift
  "$tool" -d "$dev" -F "$@" >/dev/null 2>&1 &
  local server=$!
  sleep 1
  timeout 300 "$tool" -d "$dev" -F "$@" "$ip"
  wait "$server" || true
}

echo "# compare-perftest: $dev ($(cat /sys/class/infiniband/$dev/ports/1/state 2>/dev/null | awk '{print $2}'), MTU $(ibv_devinfo -d $dev | awk '/active_mtu/ {print $2}')), $reps repetitions, $(nproc) vCPUs"
for ((r = 0; r < reps; ++r)); do
  perftest ib_write_lat -s 8 -n $lat_iters >"$work/lat_pt$r.txt"
  rb_mpirun 2 "$rb" sendrecv -t verbs --rails $dev --verb write -b 8 -e 8 -n $lat_iters -w 100 --window 1 \
    --bw-iters 1 --json "$work/lat_rb$r.json" >/dev/null
  for c in "${bw_cases[@]}"; do
    read -r size msgs depth <<<"$c"
    perftest ib_write_bw -s "$size" -n "$msgs" -t "$depth" --report_gbits >"$work/bw_pt${size}_$r.txt"
    rb_mpirun 2 "$rb" sendrecv -t verbs --rails $dev --verb write -b "$size" -e "$size" -n 10 -w 2 \
      --window "$depth" --bw-iters $((msgs / depth)) --json "$work/bw_rb${size}_$r.json" >/dev/null
  done
done

python3 - "$work" "$reps" "${bw_cases[@]}" <<'PY'
import json, statistics, sys
work, reps, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
med = statistics.median

def perftest_row(path, size):
    for line in open(path):
        f = line.split()
        if f and f[0] == str(size):
            return [float(x) for x in f]
    sys.exit(f"no {size}-byte result line in {path}:\n" + open(path).read())

def pair(path):
    return json.load(open(path))["results"][0]["pairs"][0]

# ib_write_lat: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9% (usec)
pt = [perftest_row(f"{work}/lat_pt{r}.txt", 8) for r in range(reps)]
rb = [pair(f"{work}/lat_rb{r}.json")["latency_us"] for r in range(reps)]
print("\n## write latency, 8 B (us, medians over runs; perftest typical = its median)")
print(f"{'':>10} {'p50':>9} {'p99':>9} {'p99.9':>9}")
pt_p50, pt_p99, pt_p999 = med(x[4] for x in pt), med(x[7] for x in pt), med(x[8] for x in pt)
rb_p50, rb_p99, rb_p999 = med(x["p50"] for x in rb), med(x["p99"] for x in rb), med(x["p99_9"] for x in rb)
print(f"{'perftest':>10} {pt_p50:>9.2f} {pt_p99:>9.2f} {pt_p999:>9.2f}")
print(f"{'railbench':>10} {rb_p50:>9.2f} {rb_p99:>9.2f} {rb_p999:>9.2f}")
print(f"{'ratio':>10} {rb_p50 / pt_p50:>9.2f} {rb_p99 / pt_p99:>9.2f} {rb_p999 / pt_p999:>9.2f}   target p50 <= 1.10")

print("\n## write bandwidth (GB/s = 1e9 B/s; perftest --report_gbits / 8, railbench median window a->b)")
print(f"{'size':>10} {'perftest':>10} {'railbench':>10} {'ratio':>7}  target")
for c in cases:
    size, msgs, depth = (int(x) for x in c.split())
    p = med(perftest_row(f"{work}/bw_pt{size}_{r}.txt", size)[3] / 8 for r in range(reps))
    b = med(pair(f"{work}/bw_rb{size}_{r}.json")["bw_ab_gbps"]["p50"] for r in range(reps))
    print(f"{size:>10} {p:>10.4f} {b:>10.4f} {b / p:>7.2f}  >= 0.95")
PY

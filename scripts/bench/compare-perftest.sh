#!/usr/bin/env bash
# railbench vs perftest over the same soft-RoCE device, inside ONE VM boot
# (scripts/rxe-vm/run.sh). For each verb (send, write, read) and size (8 B, 64 KiB,
# 1 MiB): perftest's ib_<verb>_lat against railbench sendrecv's ping-pong, and
# ib_<verb>_bw against railbench's one-way bandwidth; then write bandwidth over 4 queue
# pairs (ib_write_bw -q 4 against --qps-per-peer 4). Same device, sizes and message
# counts; 2 ranks. Each measurement is repeated REPS times, alternating the two tools,
# and medians are compared.
#   scripts/bench/compare-perftest.sh [REPS]        (default 3)
#   CASES="write" scripts/bench/compare-perftest.sh  (only some verbs: send write read qps)
#   VM_CLOCK=tsc scripts/bench/compare-perftest.sh   (the guest kernel keeps time with the
#     TSC, as a real host does, instead of the emulated HPET it picks under TCG, whose
#     every clock_gettime is a 0.7 us system call; perftest times with rdtsc either way)
# Targets: send and write latency p50 <= 1.10x perftest's typical (median)
# latency at 8 B; write bandwidth >= 0.95x ib_write_bw at 64 KiB and 1 MiB. The rest
# is shown for the record. railbench's write latency is its default method, `poll`
# (the responder polls the last byte, as ib_write_lat does). Latencies: send and write
# are RTT/2 in both tools, read the whole round trip in both.
# rxe under TCG emulation is slow (tens of MB/s): the ratios are what matter.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

if [[ ${1-} != --inside ]]; then
  reps=${1:-3}
  [[ $reps =~ ^[1-9][0-9]*$ ]] || {
    echo "compare-perftest: REPS must be a whole number >= 1, got '$reps'" >&2
    exit 2
  }
  case ${VM_CLOCK:-} in
    "") ;;
    tsc) export RXE_VM_APPEND="${RXE_VM_APPEND:+$RXE_VM_APPEND }clocksource=tsc tsc=reliable" ;;
    *)
      echo "compare-perftest: VM_CLOCK must be tsc or unset, got '$VM_CLOCK'" >&2
      exit 2
      ;;
  esac
  # After every refusal: a bad argument is answered before any build.
  build=${RAILBENCH_BUILD_DIR:-$root/build}
  [[ -x $build/railbench ]] || "$root/scripts/build.sh" >/dev/null
  out=$(mktemp -d)
  RAILBENCH_BUILD_DIR=$build "$root/scripts/rxe-vm/run.sh" --rails 1 --out "$out" --timeout 3000 \
    --env "CASES=${CASES:-send write read qps}" --share "$root" --share "$build" -- \
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
read -r -a cases <<<"${CASES:-send write read qps}"
# size  latency-iterations  bandwidth-messages  tx-depth: ib_*_bw keeps tx-depth
# operations in flight for that many messages; railbench sends messages / tx-depth
# windows of tx-depth.
sizes=("8 1000 8192 128" "65536 200 2048 128" "1048576 40 256 32")

perftest() { # perftest TOOL ARGS... : server and client on the same device
  local tool=$1
  shift
  "$tool" -d "$dev" -F "$@" >/dev/null 2>&1 &
  local server=$!
  sleep 1
  timeout 300 "$tool" -d "$dev" -F "$@" "$ip"
  wait "$server" || true
}

railbench() { # railbench OUT.json ARGS... : 2 ranks on the same device
  local json=$1
  shift
  rb_mpirun 2 "$rb" sendrecv -t verbs --rails $dev --json "$json" "$@" >/dev/null
}

echo "# compare-perftest: clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
echo "# compare-perftest: $dev ($(awk '{print $2}' /sys/class/infiniband/$dev/ports/1/state 2>/dev/null)," \
  "MTU $(ibv_devinfo -d $dev | awk '/active_mtu/ {print $2}')), $reps repetitions, $(nproc) vCPUs, cases: ${cases[*]}"
for ((r = 0; r < reps; ++r)); do
  for verb in "${cases[@]}"; do
    [[ $verb == qps ]] && continue
    for c in "${sizes[@]}"; do
      read -r size lat_n bw_n depth <<<"$c"
      perftest "ib_${verb}_lat" -s "$size" -n "$lat_n" >"$work/lat_pt_${verb}_${size}_$r.txt"
      railbench "$work/lat_rb_${verb}_${size}_$r.json" --verb "$verb" -b "$size" -e "$size" -n "$lat_n" \
        -w $((lat_n / 10 + 1)) --window 1 --bw-iters 1
      perftest "ib_${verb}_bw" -s "$size" -n "$bw_n" -t "$depth" --report_gbits \
        >"$work/bw_pt_${verb}_${size}_$r.txt"
      railbench "$work/bw_rb_${verb}_${size}_$r.json" --verb "$verb" -b "$size" -e "$size" -n 10 -w 2 \
        --window "$depth" --bw-iters $((bw_n / depth))
    done
  done
  if [[ " ${cases[*]} " == *" qps "* ]]; then
    for c in "${sizes[@]:1}"; do
      read -r size lat_n bw_n depth <<<"$c"
      perftest ib_write_bw -q 4 -s "$size" -n "$bw_n" -t "$depth" --report_gbits >"$work/bw_pt_qps_${size}_$r.txt"
      railbench "$work/bw_rb_qps_${size}_$r.json" --verb write --qps-per-peer 4 -b "$size" -e "$size" -n 10 -w 2 \
        --window "$((4 * depth))" --bw-iters $((bw_n / depth))
    done
  fi
done

python3 - "$work" "$reps" "${cases[*]}" "${sizes[@]}" <<'PY'
import json, math, statistics, sys
work, reps, cases, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
med = statistics.median
sizes = [int(s.split()[0]) for s in sizes]

def perftest_row(path, size):
    for line in open(path):
        f = line.split()
        if f and f[0] == str(size):
            return [float(x) for x in f]
    sys.exit(f"no {size}-byte result line in {path}:\n" + open(path).read())

def pair(path):
    return json.load(open(path))["results"][0]["pairs"][0]

def label(size):
    return f"{size} B" if size < 1024 else (f"{size >> 10} KiB" if size < 1 << 20 else f"{size >> 20} MiB")

verbs = [v for v in cases if v != "qps"]
if verbs:
    # ib_*_lat: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9% (usec)
    print("\n## latency (us, medians over runs; perftest typical = its median; railbench write: --write-latency poll)")
    print(f"{'verb':>6} {'size':>8} {'pt p50':>9} {'rb p50':>9} {'ratio':>6} {'pt p99':>9} {'rb p99':>9} "
          f"{'ratio':>6} {'pt p99.9':>9} {'rb p99.9':>9} {'ratio':>6}  target")
    for verb in verbs:
        for size in sizes:
            pt = [perftest_row(f"{work}/lat_pt_{verb}_{size}_{r}.txt", size) for r in range(reps)]
            rb = [pair(f"{work}/lat_rb_{verb}_{size}_{r}.json")["latency_us"] for r in range(reps)]
            cols = []
            for pi, key in ((4, "p50"), (7, "p99"), (8, "p99_9")):
                p, b = med(x[pi] for x in pt), med(x[key] for x in rb)
                # perftest 6.x prints inf for ib_send_lat above its buffer size: no ratio then.
                cols += [p, b, b / p if math.isfinite(p) and p > 0 else math.nan]
            target = "p50 <= 1.10" if verb in ("send", "write") and size == 8 else ""
            print(f"{verb:>6} {label(size):>8} " + " ".join(
                f"{v:>9.2f}" if i % 3 != 2 else f"{v:>6.2f}" for i, v in enumerate(cols)) + f"  {target}")

    print("\n## bandwidth (GB/s = 1e9 B/s; perftest --report_gbits BW average / 8, railbench median window a->b)")
    print(f"{'verb':>6} {'size':>8} {'perftest':>10} {'railbench':>10} {'ratio':>6}  target")
    for verb in verbs:
        for size in sizes:
            p = med(perftest_row(f"{work}/bw_pt_{verb}_{size}_{r}.txt", size)[3] / 8 for r in range(reps))
            b = med(pair(f"{work}/bw_rb_{verb}_{size}_{r}.json")["bw_ab_gbps"]["p50"] for r in range(reps))
            target = ">= 0.95" if verb == "write" and size >= 65536 else ""
            print(f"{verb:>6} {label(size):>8} {p:>10.4f} {b:>10.4f} {b / p:>6.2f}  {target}")

if "qps" in cases:
    print("\n## write bandwidth over 4 queue pairs (ib_write_bw -q 4 vs --qps-per-peer 4), GB/s")
    print(f"{'size':>8} {'perftest':>10} {'railbench':>10} {'ratio':>6}")
    for size in sizes[1:]:
        p = med(perftest_row(f"{work}/bw_pt_qps_{size}_{r}.txt", size)[3] / 8 for r in range(reps))
        b = med(pair(f"{work}/bw_rb_qps_{size}_{r}.json")["bw_ab_gbps"]["p50"] for r in range(reps))
        print(f"{label(size):>8} {p:>10.4f} {b:>10.4f} {b / p:>6.2f}")
PY

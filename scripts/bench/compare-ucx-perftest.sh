#!/usr/bin/env bash
# railbench over UCX against ucx_perftest over the same UCX transports on this host.
# For each TLS (shm, tcp on lo) and size (8 B, 64 KiB, 4 MiB): ucx_perftest tag_lat
# against railbench sendrecv's ping-pong, tag_bw against its one-way bandwidth,
# ucp_put_lat / ucp_put_bw against --verb write, ucp_get against --verb read bandwidth.
# Same sizes, message counts and window; 2 processes. Each measurement is repeated REPS
# times, alternating the two tools, and medians are compared.
#   scripts/bench/compare-ucx-perftest.sh [REPS]          (default 3)
#   TLS="shm" scripts/bench/compare-ucx-perftest.sh        (only some transports)
#   CASES="tag put" scripts/bench/compare-ucx-perftest.sh  (tag, put, get)
#   ERR=none scripts/bench/compare-ucx-perftest.sh        (ucx_perftest without -e)
#   scripts/rxe-vm/run.sh --rails 1 --env TLS=rc_verbs -- scripts/bench/compare-ucx-perftest.sh
#                                      (rc_verbs on rxe0 inside the soft-RoCE VM: fewer
#                                       messages, since each costs milliseconds there)
# railbench's endpoints handle peer failure (UCP_ERR_HANDLING_MODE_PEER, with shared
# memory's error handling on and a 1 s keepalive), so ucx_perftest runs with -e and the
# same settings by default (ERR=peer); ERR=none runs it without them: the two runs' perftest
# columns are what UCX's error handling costs by itself.
# Targets: 8 B tag latency p50 <= 1.10x ucx_perftest's median; 64 KiB and 4 MiB
# bandwidth >= 0.95x. Latency is one-way (RTT/2) in both tools. ucx_perftest's MB/s is
# 2^20 B/s; it is printed here in GB/s (1e9 B/s) as railbench reports.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/lib/mpirun.sh"

reps=${1:-3}
[[ $reps =~ ^[1-9][0-9]*$ ]] || {
  echo "compare-ucx-perftest: REPS must be a whole number >= 1, got '$reps'" >&2
  exit 2
}
command -v ucx_perftest >/dev/null || {
  echo "compare-ucx-perftest: ucx_perftest not found: install ucx-utils (scripts/install-deps.sh)" >&2
  exit 2
}
build=${RAILBENCH_BUILD_DIR:-$root/build}
[[ -x $build/railbench ]] || "$root/scripts/build.sh" >/dev/null
rb=$build/railbench
read -r -a tlss <<<"${TLS:-shm tcp}"
read -r -a cases <<<"${CASES:-tag put get}"
err=${ERR:-peer}
case $err in
  peer) err_flag=(-e) err_env="UCX_POSIX_ERROR_HANDLING=y UCX_SYSV_ERROR_HANDLING=y UCX_KEEPALIVE_INTERVAL=1s" ;;
  none) err_flag=() err_env="" ;;
  *)
    echo "compare-ucx-perftest: ERR must be peer or none, got '$err'" >&2
    exit 2
    ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))
# size  latency-iterations  bandwidth-messages  window
sizes=("8 1000 8192 128" "65536 200 2048 128" "4194304 40 256 32")

# rc_verbs (soft-RoCE, rxe0): the counts cut to what TCG emulation moves in seconds.
rc_sizes=("8 100 64 8" "65536 20 128 16" "4194304 4 16 4")

env_for() { # env_for TLS: the UCX environment ucx_perftest runs with
  case $1 in
    tcp) echo "UCX_TLS=tcp UCX_NET_DEVICES=lo $err_env" ;;
    # What railbench sets on rxe (transports/ucx/README.md): ud_verbs to wire rc up, and
    # its destination-GID check off; the shared-memory settings do not apply.
    rc_verbs) echo "UCX_TLS=rc_verbs,ud_verbs:aux UCX_NET_DEVICES=rxe0:1 UCX_UD_VERBS_ETH_DGID_CHECK=n ${err_env:+UCX_KEEPALIVE_INTERVAL=1s}" ;;
    *) echo "UCX_TLS=$1 $err_env" ;;
  esac
}

perftest() { # perftest TLS OUT ARGS... : server and client on this host
  local tls=$1 out=$2
  shift 2
  port=$((port + 1))
  env $(env_for "$tls") timeout 300 ucx_perftest -p "$port" "${err_flag[@]}" "$@" >/dev/null 2>&1 &
  local server=$!
  # The server may take seconds to listen where processes start slowly (the VM): retry.
  local try rc
  for try in {1..40}; do
    sleep 0.5
    rc=0
    env $(env_for "$tls") timeout 300 ucx_perftest localhost -p "$port" "${err_flag[@]}" "$@" >"$out" 2>&1 || rc=$?
    if ((rc == 0)) || ! grep -q "Connection refused" "$out"; then break; fi
  done
  ((rc == 0)) || {
    echo "compare-ucx-perftest: ucx_perftest $* over $tls failed (try $try):" >&2
    cat "$out" >&2
    exit 1
  }
  wait "$server" || true
}

railbench() { # railbench TLS OUT.json ARGS... : 2 ranks
  local tls=$1 json=$2 rails=()
  shift 2
  [[ $tls == tcp ]] && rails=(--rails lo)
  [[ $tls == rc_verbs ]] && rails=(--rails rxe0:1)
  rb_mpirun 2 "$rb" sendrecv -t "ucx:$tls" "${rails[@]}" --json "$json" "$@" >/dev/null 2>"$work/railbench.err" || {
    cat "$work/railbench.err" >&2
    exit 1
  }
}

echo "# compare-ucx-perftest: UCX $(ucx_info -v | awk '/^# Version/ {print $3}'), $reps repetitions," \
  "$(nproc) CPUs, TLS: ${tlss[*]}, cases: ${cases[*]}, ucx_perftest error handling: $err"
for ((r = 0; r < reps; ++r)); do
  for tls in "${tlss[@]}"; do
    tls_sizes=("${sizes[@]}")
    [[ $tls == rc_verbs ]] && tls_sizes=("${rc_sizes[@]}")
    for c in "${tls_sizes[@]}"; do
      read -r size lat_n bw_n depth <<<"$c"
      for case in "${cases[@]}"; do
        case $case in
          tag) verb=send lat=tag_lat bw=tag_bw ;;
          put) verb=write lat=ucp_put_lat bw=ucp_put_bw ;;
          get) verb=read lat="" bw=ucp_get ;;
          *)
            echo "compare-ucx-perftest: unknown case '$case' (tag, put, get)" >&2
            exit 2
            ;;
        esac
        if [[ -n $lat ]]; then
          perftest "$tls" "$work/lat_pt_${tls}_${case}_${size}_$r.txt" -t "$lat" -s "$size" \
            -n "$lat_n" -w $((lat_n / 10 + 1))
          railbench "$tls" "$work/lat_rb_${tls}_${case}_${size}_$r.json" --verb "$verb" -b "$size" -e "$size" \
            -n "$lat_n" -w $((lat_n / 10 + 1)) --window 1 --bw-iters 1
        fi
        perftest "$tls" "$work/bw_pt_${tls}_${case}_${size}_$r.txt" -t "$bw" -s "$size" \
          -n "$bw_n" -w $((bw_n / 10)) -O "$depth"
        railbench "$tls" "$work/bw_rb_${tls}_${case}_${size}_$r.json" --verb "$verb" -b "$size" -e "$size" \
          -n 10 -w 2 --window "$depth" --bw-iters $((bw_n / depth))
      done
    done
  done
done

python3 - "$work" "$reps" "${tlss[*]}" "${cases[*]}" "${sizes[@]}" <<'PY'
import json, statistics, sys
work, reps, tlss, cases, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5:]
med = statistics.median
sizes = [int(s.split()[0]) for s in sizes]

def final(path):
    # Final: iterations p50 avg overall (usec) bw-avg bw-overall (MB/s) rate-avg rate-overall
    for line in open(path):
        if line.startswith("Final:"):
            return [float(x) for x in line.split()[1:]]
    sys.exit(f"no Final: line in {path}:\n" + open(path).read())

def pair(path):
    return json.load(open(path))["results"][0]["pairs"][0]

def label(size):
    return f"{size} B" if size < 1024 else (f"{size >> 10} KiB" if size < 1 << 20 else f"{size >> 20} MiB")

print("\n## latency p50 (us, one-way; medians over runs)")
print(f"{'tls':>4} {'case':>5} {'size':>8} {'perftest':>9} {'railbench':>9} {'ratio':>6}  target")
for tls in tlss:
    for case in [c for c in cases if c != "get"]:
        for size in sizes:
            p = med(final(f"{work}/lat_pt_{tls}_{case}_{size}_{r}.txt")[1] for r in range(reps))
            b = med(pair(f"{work}/lat_rb_{tls}_{case}_{size}_{r}.json")["latency_us"]["p50"] for r in range(reps))
            target = "<= 1.10" if case == "tag" and size == 8 else ""
            print(f"{tls:>4} {case:>5} {label(size):>8} {p:>9.2f} {b:>9.2f} {b / p:>6.2f}  {target}")

print("\n## bandwidth (GB/s = 1e9 B/s; ucx_perftest overall MB/s x 2^20, railbench median window a->b)")
print(f"{'tls':>4} {'case':>5} {'size':>8} {'perftest':>9} {'railbench':>9} {'ratio':>6}  target")
for tls in tlss:
    for case in cases:
        for size in sizes:
            p = med(final(f"{work}/bw_pt_{tls}_{case}_{size}_{r}.txt")[5] * 2**20 / 1e9 for r in range(reps))
            b = med(pair(f"{work}/bw_rb_{tls}_{case}_{size}_{r}.json")["bw_ab_gbps"]["p50"] for r in range(reps))
            target = ">= 0.95" if size >= 65536 else ""
            print(f"{tls:>4} {case:>5} {label(size):>8} {p:>9.4f} {b:>9.4f} {b / p:>6.2f}  {target}")
PY

#!/usr/bin/env bash
# railbench over UCX against ucx_perftest over the same UCX transports on this host.
# For each TLS (shm, tcp on lo) and size (8 B, 64 KiB, 4 MiB): ucx_perftest tag_lat
# against railbench sendrecv's ping-pong, tag_bw against its one-way bandwidth,
# ucp_put_lat / ucp_put_bw against --verb write, ucp_get against --verb read bandwidth.
# Same sizes, message counts and window; 2 processes. Each measurement is repeated REPS
# times, alternating the two tools, and medians are compared.
# Both tools run in each core regime: `own` (the server / rank 0 on CPU 0, the client /
# rank 1 on CPU 1, each pinned with taskset) and `shared` (both pinned to CPU 0). The
# tables and the closing ratio lines name the regime of every figure.
#   scripts/bench/compare-ucx-perftest.sh [REPS]          (default 5)
#   REGIMES=own scripts/bench/compare-ucx-perftest.sh      (own, shared)
#   TLS="shm" scripts/bench/compare-ucx-perftest.sh        (only some transports)
#   CASES="tag put" scripts/bench/compare-ucx-perftest.sh  (tag, put, get)
#   ERR=none scripts/bench/compare-ucx-perftest.sh        (ucx_perftest without -e)
#   scripts/rxe-vm/run.sh --rails 1 --env TLS=rc_verbs -- scripts/bench/compare-ucx-perftest.sh
#                                      (rc_verbs on rxe0 inside the soft-RoCE VM: fewer
#                                       messages, since each costs milliseconds there)
# railbench's endpoints handle peer failure (UCP_ERR_HANDLING_MODE_PEER, with shared
# memory's error handling on and a 1 s keepalive), so ucx_perftest runs with -e and the
# same settings by default (ERR=peer); ERR=none runs both without them (railbench with
# RAILBENCH_UCX_PEER_FAILURE=off): the two runs' columns are what UCX's error handling
# costs by itself (over shm, UCX 1.13 leaves cma out of peer-failure endpoints).
# Targets: 8 B tag latency p50 <= 1.10x ucx_perftest's median; 64 KiB and 4 MiB
# bandwidth >= 0.95x. Latency is one-way (RTT/2) in both tools. ucx_perftest's MB/s is
# 2^20 B/s; it is printed here in GB/s (1e9 B/s) as railbench reports.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/lib/mpirun.sh"

reps=${1:-5}
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
read -r -a regimes <<<"${REGIMES:-own shared}"
for regime in "${regimes[@]}"; do
  case $regime in
    own)
      (($(nproc) >= 2)) || {
        echo "compare-ucx-perftest: REGIMES=own needs 2 CPUs, this host has $(nproc): use REGIMES=shared" >&2
        exit 2
      }
      ;;
    shared) ;;
    *)
      echo "compare-ucx-perftest: REGIMES takes own and shared, got '$regime'" >&2
      exit 2
      ;;
  esac
done
err=${ERR:-peer}
case $err in
  peer) rb_err=() err_flag=(-e) err_env="UCX_POSIX_ERROR_HANDLING=y UCX_SYSV_ERROR_HANDLING=y UCX_KEEPALIVE_INTERVAL=1s" ;;
  none) err_flag=() err_env="" rb_err=(-x RAILBENCH_UCX_PEER_FAILURE=off) ;;
  *)
    echo "compare-ucx-perftest: ERR must be peer or none, got '$err'" >&2
    exit 2
    ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Rank r of railbench runs on the r-th CPU of PIN (Open MPI names the rank).
cat >"$work/pin.sh" <<'EOF'
#!/usr/bin/env bash
read -r -a cpus <<<"$PIN"
exec taskset -c "${cpus[${OMPI_COMM_WORLD_RANK:-0}]}" "$@"
EOF
chmod +x "$work/pin.sh"
cpus_of() { [[ $1 == own ]] && echo "0 1" || echo "0 0"; }
port=$((20000 + RANDOM % 20000))
# size  latency-iterations  bandwidth-messages  window
sizes=("8 1000 8192 128" "65536 200 2048 128" "4194304 40 256 16")

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

perftest() { # perftest TLS OUT ARGS... : server and client on this host, on PIN's CPUs
  local tls=$1 out=$2 cpus
  shift 2
  read -r -a cpus <<<"$PIN"
  port=$((port + 1))
  env $(env_for "$tls") timeout 300 taskset -c "${cpus[0]}" ucx_perftest -p "$port" "${err_flag[@]}" "$@" \
    >/dev/null 2>&1 &
  local server=$!
  # The server may take seconds to listen where processes start slowly (the VM): retry.
  local try rc
  for try in {1..40}; do
    sleep 0.5
    rc=0
    env $(env_for "$tls") timeout 300 taskset -c "${cpus[1]}" ucx_perftest localhost -p "$port" "${err_flag[@]}" "$@" \
      >"$out" 2>&1 || rc=$?
    if ((rc == 0)) || ! grep -q "Connection refused" "$out"; then break; fi
  done
  ((rc == 0)) || {
    echo "compare-ucx-perftest: ucx_perftest $* over $tls failed (try $try):" >&2
    cat "$out" >&2
    exit 1
  }
  wait "$server" || true
}

railbench() { # railbench TLS OUT.json ARGS... : 2 ranks, on PIN's CPUs
  local tls=$1 json=$2 rails=()
  shift 2
  [[ $tls == tcp ]] && rails=(--rails lo)
  [[ $tls == rc_verbs ]] && rails=(--rails rxe0:1)
  rb_mpirun 2 -x PIN "${rb_err[@]}" "$work/pin.sh" "$rb" sendrecv -t "ucx:$tls" "${rails[@]}" --json "$json" "$@" >/dev/null 2>"$work/railbench.err" || {
    cat "$work/railbench.err" >&2
    exit 1
  }
}

echo "# compare-ucx-perftest: UCX $(ucx_info -v | awk '/^# Version/ {print $3}'), $reps repetitions," \
  "$(nproc) CPUs, TLS: ${tlss[*]}, cases: ${cases[*]}, core regimes: ${regimes[*]}," \
  "ucx_perftest error handling: $err"
for ((r = 0; r < reps; ++r)); do
  for regime in "${regimes[@]}"; do
    export PIN
    PIN=$(cpus_of "$regime")
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
            perftest "$tls" "$work/lat_pt_${regime}_${tls}_${case}_${size}_$r.txt" -t "$lat" -s "$size" \
              -n "$lat_n" -w $((lat_n / 10 + 1))
            railbench "$tls" "$work/lat_rb_${regime}_${tls}_${case}_${size}_$r.json" --verb "$verb" -b "$size" -e "$size" \
              -n "$lat_n" -w $((lat_n / 10 + 1)) --window 1 --bw-iters 1
          fi
          perftest "$tls" "$work/bw_pt_${regime}_${tls}_${case}_${size}_$r.txt" -t "$bw" -s "$size" \
            -n "$bw_n" -w $((bw_n / 10)) -O "$depth"
          railbench "$tls" "$work/bw_rb_${regime}_${tls}_${case}_${size}_$r.json" --verb "$verb" -b "$size" -e "$size" \
            -n 10 -w 2 --window "$depth" --bw-iters $((bw_n / depth))
        done
      done
    done
  done
done

python3 - "$work" "$reps" "${regimes[*]}" "${tlss[*]}" "${cases[*]}" "${sizes[@]}" <<'PY'
import json, statistics, sys
work, reps, regimes, tlss, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split()
sizes = sys.argv[6:]
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

# Each repetition ran the two tools back to back, so a repetition's own ratio cancels a
# slow spell of the host that hits both; "run ratio" is the median of those.
def row(regime, tls, case, size, pt, rb, target):
    p, b = med(pt), med(rb)
    per_run = med(y / x for x, y in zip(pt, rb))
    print(f"{regime:>6} {tls:>4} {case:>5} {label(size):>8} {p:>9.4g} {b:>9.4g} {b / p:>6.2f} {per_run:>9.2f}  {target}")
    return b / p, per_run

header = f"{'cores':>6} {'tls':>4} {'case':>5} {'size':>8} {'perftest':>9} {'railbench':>9} {'ratio':>6} {'run ratio':>9}  target"
ratios = []
print(f"\n## latency p50 (us, one-way; medians over {reps} runs)")
print(header)
for regime in regimes:
    for tls in tlss:
        for case in [c for c in cases if c != "get"]:
            for size in sizes:
                pt = [final(f"{work}/lat_pt_{regime}_{tls}_{case}_{size}_{r}.txt")[1] for r in range(reps)]
                rb = [pair(f"{work}/lat_rb_{regime}_{tls}_{case}_{size}_{r}.json")["latency_us"]["p50"] for r in range(reps)]
                target = "<= 1.10" if case == "tag" and size == 8 else ""
                ratio, per_run = row(regime, tls, case, size, pt, rb, target)
                if case == "tag" and size == 8:
                    ratios.append((regime, tls, f"{label(size)} tag latency p50", ratio, per_run, target))

print(f"\n## bandwidth (GB/s = 1e9 B/s; ucx_perftest overall MB/s x 2^20, railbench median window a->b; medians over {reps} runs)")
print(header)
for regime in regimes:
    for tls in tlss:
        for case in cases:
            for size in sizes:
                pt = [final(f"{work}/bw_pt_{regime}_{tls}_{case}_{size}_{r}.txt")[5] * 2**20 / 1e9 for r in range(reps)]
                rb = [pair(f"{work}/bw_rb_{regime}_{tls}_{case}_{size}_{r}.json")["bw_ab_gbps"]["p50"] for r in range(reps)]
                target = ">= 0.95" if size >= 65536 else ""
                ratio, per_run = row(regime, tls, case, size, pt, rb, target)
                if case == "tag" and size == max(sizes):
                    ratios.append((regime, tls, f"{label(size)} tag bandwidth", ratio, per_run, target))

names = {"own": "own cores (CPU 0 / CPU 1)", "shared": "shared core (both on CPU 0)"}
print(f"\n## railbench / ucx_perftest (ratio of the medians; median of the {reps} runs' own ratios)")
for regime, tls, what, ratio, per_run, target in ratios:
    print(f"ratio {names[regime]}: ucx:{tls} {what}: {ratio:.2f} (runs: {per_run:.2f}), target {target}")
PY

#!/usr/bin/env bash
# Where does 8 B latency go on soft-RoCE? Inside ONE VM boot (scripts/rxe-vm/run.sh),
# runs perftest's ib_<verb>_lat and railbench sendrecv's ping-pong at 8 B, each twice:
# once under `strace -c -f` (system calls per iteration, by name) and once under a
# system-wide `perf record -e cpu-clock` (where the vCPUs' time goes: by command and
# symbol, kernel included). Prints both side by side per tool.
#   scripts/bench/profile-rxe-lat.sh [VERB] [ITERS]   (default: write 20000)
# Use it when railbench's 8 B send or write latency on rxe is well above perftest's
# (scripts/bench/compare-perftest.sh): the two profiles show where the extra time goes.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

if [[ ${1-} != --inside ]]; then
  verb=${1:-write} iters=${2:-20000}
  [[ $verb =~ ^(send|write|read)$ ]] || {
    echo "profile-rxe-lat: VERB must be send, write or read, got '$verb'" >&2
    exit 2
  }
  [[ $iters =~ ^[1-9][0-9]*$ ]] || {
    echo "profile-rxe-lat: ITERS must be a whole number >= 1, got '$iters'" >&2
    exit 2
  }
  build=${RAILBENCH_BUILD_DIR:-$root/build}
  [[ -x $build/railbench ]] || "$root/scripts/build.sh" >/dev/null
  out=${OUT:-$(mktemp -d)}
  rc=0
  RAILBENCH_BUILD_DIR=$build "$root/scripts/rxe-vm/run.sh" --rails 1 --out "$out" --timeout 3000 \
    --share "$root" --share "$build" -- \
    "$root/scripts/bench/profile-rxe-lat.sh" --inside "$verb" "$iters" || rc=$?
  echo "# profile-rxe-lat: raw data in $out"
  exit $rc
fi

# ---- inside the VM ----
verb=$2 iters=$3
source "$root/scripts/lib/mpirun.sh"
rb=${RAILBENCH_BUILD_DIR:-$root/build}/railbench
dev=rxe0
ip=$(ip -4 -o addr show eth0 | awk '{split($4, a, "/"); print a[1]}')
work=/out
command -v perf >/dev/null || { echo "profile-rxe-lat: perf not found (apt-get install linux-perf)" >&2; exit 2; }
echo 0 >/proc/sys/kernel/kptr_restrict 2>/dev/null || true
echo -1 >/proc/sys/kernel/perf_event_paranoid 2>/dev/null || true

run_perftest() { # WRAP... : ib_<verb>_lat server and client, both under the wrapper
  "$@" "ib_${verb}_lat" -d "$dev" -F -s 8 -n "$iters" >/dev/null 2>&1 &
  local server=$!
  sleep 1
  timeout 600 "$@" "ib_${verb}_lat" -d "$dev" -F -s 8 -n "$iters" "$ip"
  wait "$server" || true
}
run_railbench() { # WRAP... : both ranks under the wrapper
  rb_mpirun 2 "$@" "$rb" sendrecv -t verbs --rails $dev --verb "$verb" -b 8 -e 8 -n "$iters" \
    -w 100 --window 1 --bw-iters 1 --json "$work/rb.json"
}

# perf runs system-wide beside the runner (a shell function, which perf cannot exec)
# and stops with SIGINT (no command of its own), which makes it write its data out.
beside() { # OUT_FILE PERF_ARGS... -- RUNNER : perf over the whole system while RUNNER runs
  local runner=${*: -1} pid
  perf "${@:1:$#-1}" -a >/dev/null 2>&1 &
  pid=$!
  sleep 1
  "$runner" env >/dev/null 2>&1 || true
  kill -INT "$pid"
  wait "$pid" || true
}

profile() { # NAME RUNNER
  local name=$1 runner=$2
  echo "## $name: timing alone"
  "$runner" env | tail -n 25
  echo "## $name: system calls on the whole VM (perf stat on the syscall tracepoints)"
  beside stat -o "$work/stat_$name.txt" -e "$syscalls" "$runner"
  grep -E 'syscalls|elapsed' "$work/stat_$name.txt" || true
  echo "## $name: perf, system-wide cpu-clock"
  beside record -q -g -e cpu-clock -F 4000 -o "$work/perf_$name.data" "$runner"
  perf report -i "$work/perf_$name.data" --no-children --sort comm,dso,sym --stdio -g none \
    >"$work/perf_$name.txt" 2>&1 || true
  grep -v '^#' "$work/perf_$name.txt" | grep -v '^$' | head -n 45 || true
}
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
mountpoint -q /sys/kernel/debug || mount -t debugfs nodev /sys/kernel/debug 2>/dev/null || true
syscalls=""
for s in write ioctl clock_gettime gettimeofday sched_yield clock_nanosleep nanosleep poll epoll_wait read; do
  syscalls+="${syscalls:+,}syscalls:sys_enter_$s"
done
profile perftest run_perftest
profile railbench run_railbench

#!/usr/bin/env bash
# Two railbench processes started by hand (no mpirun), meeting through
# RAILBENCH_ROOT; both subcommands must complete with -c and no wrong data.
source "$(dirname "$0")/../support/case.sh"
rb=$1
port=$((20000 + RANDOM % 20000))
case_work
case_on_exit 'kill $(jobs -p) 2>/dev/null'
for cmd in "sendrecv -b 8 -e 64K -f 16 -n 100 --bw-iters 3" "allreduce -b 1K -e 1M -f 8"; do
  pids=()
  for r in 0 1; do
    RAILBENCH_RANK=$r RAILBENCH_WORLD_SIZE=2 RAILBENCH_ROOT=127.0.0.1:$port \
      timeout 120 "$rb" $cmd -t ofi:tcp --rails lo -c --timeout 30 --json "$work/$r.json" >"$work/out$r" 2>&1 &
    pids+=($!)
  done
  wait "${pids[0]}"; rc0=$?
  wait "${pids[1]}"; rc1=$?
  cat "$work/out0"
  if ((rc0 != 0 || rc1 != 0)); then
    fail "'$cmd': expected exit codes 0 0, got $rc0 $rc1"
  fi
  grep -q '"bootstrap": "tcp"' "$work/0.json" || fail "results do not record the tcp bootstrap"
  port=$((port + 1))
done
echo PASS

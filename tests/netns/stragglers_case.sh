#!/usr/bin/env bash
# Straggler attribution on the simulated SU (4 nodes x 2 rails, 400 Mb/s links, traffic
# striped over both rails), for `allreduce --stragglers` (one rank per node) or for
# `workload` (a small model, tp 2 x pp 2 x dp 2: two ranks per node): healthy, the
# verdict names nobody; with node03's rail1 cable degraded to 25% it names a slow link
# from or to node03 on rail 1, and no late arriver; with node03's first rank stopped
# (SIGSTOP) for 20 ms every 100 ms it names that rank as the late arriver, and no link
# beyond the threshold. For workload, the same step is also written as a Chakra
# execution trace (--emit-trace-format chakra, one file per rank) and replayed with
# --trace on the degraded SU: the verdict names the same cable. (allreduce records only the out-of-place half of its run: at one
# stop every 200 ms, 4 to 6 of its 16 iterations were hit, too close to the 25% the
# verdict needs; every 100 ms hits most.) Exit 77 without namespaces.
#   stragglers_case.sh RAILBENCH [allreduce|workload]
source "$(dirname "$0")/../support/case.sh"
rb=$1
cmd=${2:-allreduce}
fixtures=$here/../workload/fixtures
if [[ $cmd == workload ]]; then
  slots=2 stopped=4
  spec=(--model "$fixtures/tiny-dense.json" --tp 2 --pp 2 --dp 2 --seq 256 --micro-batches 4 --compute-us 200)
  args=(workload -t ofi:tcp --rails rail0,rail1 "${spec[@]}" -n 16 -w 1)
else
  slots=1 stopped=2
  args=(allreduce -t ofi:tcp --rails rail0,rail1 -b 2M -e 2M -n 16 -w 1 --slice-bytes 64K --stragglers)
fi
case_su_up rbstg
"$su/up.sh" --nodes 4 --rails 2 --rate 400 >/dev/null || fail "could not build the simulated SU"

# The rank to stop writes its pid (the exec keeps it) so the stopper can find it.
run() {  # run NAME [RAILBENCH ARGS...] (default: the case's)
  local name=$1 a=("${args[@]}")
  shift
  (($# == 0)) || a=("$@")
  timeout --kill-after=10 90 "$su/mpirun.sh" --slots "$slots" -- bash -c \
    'if [ "$OMPI_COMM_WORLD_RANK" = "$1" ]; then echo $$ >"$0.pid"; fi; shift; exec "$@"' "$work/p" "$stopped" "$rb" \
    "${a[@]}" --json "$work/$name.json" -q >"$work/out" 2>"$work/err" || fail "$cmd $name failed (exit $?)"
  grep -E '^# (stragglers|  |straggler verdict)' "$work/out"
}

# judge NAME KIND [link-only]: the verdict's kind, and what it names (link-only: the
# slow link, whatever ranks are named beside it).
judge() {
  python3 - "$work/$1.json" "$2" "$stopped" "${3:-}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["stragglers"]
stopped = int(sys.argv[3])
kind = s["verdict"]["kind"]
assert kind == sys.argv[2], f"verdict {kind!r}, expected {sys.argv[2]!r}: {s['verdict']['text']}"
over_ranks = [b["name"] for b in s["ranks"] if b["beyond_threshold"]]
over_links = [b["name"] for b in s["links"] if b["beyond_threshold"]]
if kind == "slow_link":
    top = max((b for b in s["links"] if b["beyond_threshold"]), key=lambda b: b["cost_ms"])
    assert "node03" in (top["src_node"], top["dst_node"]) and top["rail"] == 1, top
    assert not over_ranks or sys.argv[4] == "link-only", f"late arrivers named on a degraded link: {over_ranks}"
if kind == "late_arriver":
    top = max((b for b in s["ranks"] if b["beyond_threshold"]), key=lambda b: b["cost_ms"])
    assert top["rank"] == stopped, top
    assert not over_links, f"links named for a stopped rank: {over_links}"
print(f"ok: {s['verdict']['text']}")
PY
}

echo "== healthy"
run healthy
judge healthy none || fail "a healthy SU named a straggler"

echo "== node03 rail1 degraded to 25%"
"$su/fault.sh" degrade node03 rail1 25 >/dev/null
run degraded
judge degraded slow_link || fail "the degraded link was not named"
if [[ $cmd == workload ]]; then
  echo "== the same step as a Chakra trace, node03 rail1 still degraded"
  "$rb" workload "${spec[@]}" --emit-trace "$work/step.{rank}.et" --emit-trace-format chakra >/dev/null ||
    fail "could not write the step as a Chakra trace"
  run chakra workload -t ofi:tcp --rails rail0,rail1 --trace "$work/step.{rank}.et" -n 16 -w 1
  # The step is the spec's op for op (tests/workload's round trip): the spec's run above
  # already holds the ranks blameless; here the cable must be named.
  judge chakra slow_link link-only || fail "the degraded link was not named from the Chakra trace"
fi
"$su/fault.sh" clear >/dev/null

echo "== rank $stopped (node03) stopped 20 ms every 100 ms"
stopper() {
  while [[ ! -s $work/p.pid ]]; do sleep 0.01; done
  local pid
  pid=$(cat "$work/p.pid")
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.08
    kill -STOP "$pid" 2>/dev/null
    sleep 0.02
    kill -CONT "$pid" 2>/dev/null
  done
}
rm -f "$work/p.pid"
stopper &
stopper_pid=$!
run stopped
kill "$stopper_pid" 2>/dev/null
wait "$stopper_pid" 2>/dev/null
judge stopped late_arriver || fail "the stopped rank was not named as the late arriver"
echo "PASS"

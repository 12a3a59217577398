#!/usr/bin/env bash
# The TCP bootstrap's tree with real railbench processes (no mpirun), 9 ranks, so ranks
# 2, 4, 6 and 8 are parents that listen and rank 8's subtree is one rank:
#   ok:   RAILBENCH_BOOTSTRAP_TOPOLOGY=tree on rank 0 only (rank 0's choice is the job's):
#         an all-reduce with -c completes on every rank and the results say "tree";
#   kill: rank 6 (parent 4, child 7) killed once the sweep runs: every rank exits non-zero
#         within the deadline, none hangs, and rank 0's results file is "failed" and names
#         rank 6 (its liveness probe names the dead rank a subtree away).
#   tree_case.sh ok|kill RAILBENCH
source "$(dirname "$0")/../support/case.sh"
set -e
what=$1 rb=$2
case_work
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
case_on_exit cleanup
world=9
port=$(free_port)
launch() {  # launch railbench-args...: every rank in the background, pids in $pids
  local r topology
  for ((r = 0; r < world; ++r)); do
    topology=star
    ((r == 0)) && topology=tree
    RAILBENCH_RANK=$r RAILBENCH_WORLD_SIZE=$world RAILBENCH_ROOT=127.0.0.1:$port RAILBENCH_JOB_TOKEN=tree-$port \
      RAILBENCH_BOOTSTRAP_TOPOLOGY=$topology timeout --kill-after=5 120 "$rb" allreduce -t ofi:tcp --rails lo \
      --json "$work/r$r.json" "$@" >"$work/out$r" 2>"$work/err$r" </dev/null &
    pids+=($!)
  done
}
layout_and_status() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["world"]["bootstrap_layout"], d["status"], d.get("error", ""))' "$1"
}

case $what in
ok)
  launch -b 8 -e 64K -n 5 -w 1 -c --timeout 30
  for ((r = 0; r < world; ++r)); do
    wait "${pids[r]}" || fail "rank $r exit $?"
  done
  read -r layout status _ < <(layout_and_status "$work/r0.json")
  [[ $layout == tree ]] || fail "results say bootstrap_layout $layout, expected tree"
  [[ $status == complete ]] || fail "results status $status"
  echo "ok: $world ranks over the tree, $(grep -c '"op"' "$work/r0.json" || true) result lines"
  ;;
kill)
  launch -b 1K -e 16M -n 40 -w 1 --timeout 10
  for ((i = 0; i < 600; ++i)); do
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d["results"]) >= 2 else 1)' \
      "$work/r0.json" 2>/dev/null && break
    sleep 0.1
  done
  start=$SECONDS
  kill -KILL "$(pgrep -P "${pids[6]}" | head -1)"
  for ((r = 0; r < world; ++r)); do
    rc=0
    wait "${pids[r]}" || rc=$?
    ((r != 6)) || continue  # killed: 137 from `timeout`
    ((rc != 0)) || fail "rank $r exit 0 after rank 6 was killed"
    ((rc != 124 && rc != 137)) || fail "rank $r hung until timeout killed it"
  done
  elapsed=$((SECONDS - start))
  read -r layout status error < <(layout_and_status "$work/r0.json")
  [[ $layout == tree ]] || fail "results say bootstrap_layout $layout, expected tree"
  [[ $status == failed ]] || fail "results status $status, expected failed"
  grep -q "rank 6" <<<"$error" || fail "rank 0's error does not name rank 6: $error"
  echo "kill: every rank ended in ${elapsed} s; rank 0: $error"
  ;;
*)
  echo "usage: tree_case.sh ok|kill RAILBENCH" >&2
  exit 2
  ;;
esac

#!/usr/bin/env bash
# How a run ends badly, and what its results file says then (README: "What happens when
# a run ends badly"). Every case has a hard deadline and kills only what it started.
#   cases.sh CASE RAILBENCH
# CASE:
#   signal-rank-SIG  SIG (TERM, INT, HUP) to rank 0 of a sweep: its JSON says failed,
#                    "interrupted by SIGSIG", keeps the sizes done; one line; exit 128+sig
#   signal-peer      SIGTERM to rank 1: it says so in one line and exits 143; rank 0's
#                    JSON says failed (the peer is gone), never "running"
#   crash            SIGSEGV to rank 0: "crashed with SIGSEGV", the signal's own exit status
#   mpirun-SIG       SIG (TERM, INT) to mpirun: rank 0's JSON says failed, interrupted; one line
#   mpirun-TERM-main-stuck  the same with every rank's main thread unable to take the signal
#                    (RAILBENCH_TEST_MAIN_BLOCKS_SIGNALS=1, as a main thread stuck in the
#                    kernel): another thread writes the verdict, within the launcher's grace
#   mpirun-kill9     kill -9 of rank 1 under mpirun: rank 0's JSON says failed
#   stop-teardown    SIGSTOP of rank 2 of 4 until the others time out: nobody crashes
#                    tearing down, and rank 0's JSON says failed
#   validate         SIGTERM to rank 0 of validate: failed, rounds so far kept, the
#                    stale drain list replaced by this run's (empty: nothing bad yet)
#   disk-full        the JSON's filesystem fills mid-sweep: the last good file says
#                    "failed: no space left on device", no temporary left (root: tmpfs)
#   special-target   --json at a fifo and a character device: never replaced by a file
#   symlink          a planted FILE.tmp -> victim symlink is never followed
#   json-dir         --json DIR, or in a missing directory: exit 2 before running
# Exit 77 (ctest: skipped) when the host lacks what a case needs (root for a tmpfs).
source "$(dirname "$0")/../support/case.sh"
case_name=$1 rb=$2
case_work
cleanup() {
  mountpoint -q "$work/fs" 2>/dev/null && umount "$work/fs"
}
case_on_exit cleanup

signo() { kill -l "$1"; }

# Entries in a results file's "results" (0 when missing or unreadable).
count_results() {
  python3 -c 'import json,sys
try: print(len(json.load(open(sys.argv[1]))["results"]))
except Exception: print(0)' "$1"
}

# wait_results FILE N SECONDS: until FILE holds N entries.
wait_results() {
  local i
  for ((i = 0; i < $3 * 10; ++i)); do
    (($(count_results "$1") >= $2)) && return 0
    sleep 0.1
  done
  fail "$1 did not reach $2 result entries within $3 s"
}

# check_json FILE STATUS ERROR_REGEX MIN_RESULTS
check_json() {
  python3 - "$@" <<'PY' || fail "results file check"
import json, re, sys
path, status, error, least = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
doc = json.load(open(path))
print(f"{path}: status {doc['status']!r}, error {doc.get('error')!r}, {len(doc['results'])} results, "
      f"updated_at {doc.get('updated_at')}")
assert doc["status"] == status, f"status {doc['status']!r}, expected {status!r}"
if error:
    assert re.search(error, doc.get("error", "")), f"error {doc.get('error')!r} does not match /{error}/"
assert len(doc["results"]) >= least, f"{len(doc['results'])} results kept, expected at least {least}"
assert "updated_at" in doc and "finished_at" in doc, "updated_at and finished_at are set"
PY
}

no_temporaries() {
  local left
  left=$(find "$1" -maxdepth 1 -name '*.tmp*' | head -5)
  [[ -z $left ]] || fail "temporary files left behind: $left"
}

# Two ranks over the TCP rendezvous (no mpirun, so each rank's exit status is ours to
# see): an allreduce sweep with many sizes, results of rank 0 in $work/r.json.
port=$((20000 + RANDOM % 20000))
start_pair() {
  local r
  pids=()
  for r in 0 1; do
    RAILBENCH_RANK=$r RAILBENCH_WORLD_SIZE=2 RAILBENCH_ROOT=127.0.0.1:$port \
      timeout --kill-after=5 90 "$rb" allreduce -t ofi:tcp --rails lo -b 1K -e 64M -n 40 -w 1 --timeout 5 \
      --json "$work/r.json" "$@" >"$work/out$r" 2>"$work/err$r" &
    pids+=($!)
    case_started $!
  done
}
# The railbench process under `timeout`: the one to signal.
child_of() { pgrep -P "$1" | head -1; }

# start_mpirun NP railbench-args...: mpirun in the background, its pid in $mpirun_pid.
# Job control on, so that mpirun does not inherit SIGINT ignored (as a background job of
# a script would) and a SIGINT sent to it counts.
start_mpirun() {
  local np=$1 i
  shift
  set -m
  rb_mpirun "$np" "$rb" "$@" >"$work/out" 2>"$work/err" &
  launcher=$!
  case_started $launcher
  set +m
  mpirun_pid=""
  for ((i = 0; i < 100; ++i)); do
    mpirun_pid=$(pgrep -P "$launcher" -x mpirun)
    [[ -n $mpirun_pid ]] && break
    sleep 0.1
  done
  [[ -n $mpirun_pid ]] || fail "mpirun did not start"
  case_started $mpirun_pid
}
# The pid of rank R under mpirun.
rank_pid() {
  local p
  for p in $(pgrep -P "$mpirun_pid"); do
    grep -qz "^OMPI_COMM_WORLD_RANK=$1\$" "/proc/$p/environ" 2>/dev/null && { echo "$p"; return; }
  done
  fail "rank $1 not found among mpirun's children"
}
# Until mpirun (and the shell around it) is gone, at most 30 s.
wait_job_end() {
  local i
  for ((i = 0; i < 300; ++i)); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$launcher" 2>/dev/null && fail "the job still runs 30 s after it was ended"
  wait "$launcher"
  echo "mpirun exit $?"
}

# Exactly one line on stderr that matches, besides the progress lines rank 0 writes
# per size ("allreduce: size 3/17 (4K), 00:01 elapsed"; README "Common options").
progress_re='^[a-z]+: .*[0-9]{2}:[0-9]{2} elapsed'
one_line() {  # one_line FILE REGEX
  local n
  n=$(grep -Ev "$progress_re" "$1" | grep -c .)
  ((n == 1)) || fail "expected one line on $(basename "$1"), got $n"
  grep -Eq -- "$2" "$1" || fail "$(basename "$1") does not match /$2/: $(cat "$1")"
}

case $case_name in
signal-rank-*)
  sig=${case_name#signal-rank-}
  start_pair
  wait_results "$work/r.json" 3 60
  done_before=$(count_results "$work/r.json")
  kill -"$sig" "$(child_of "${pids[0]}")"
  wait "${pids[0]}"
  rc0=$?
  wait "${pids[1]}"
  ((rc0 == 128 + $(signo "$sig"))) || fail "rank 0 exit $rc0, expected $((128 + $(signo "$sig")))"
  check_json "$work/r.json" failed "^interrupted by SIG$sig\$" "$done_before"
  one_line "$work/err0" "^railbench: error: interrupted by SIG$sig; the results so far are in"
  no_temporaries "$work"
  ;;
signal-peer)
  start_pair
  wait_results "$work/r.json" 3 60
  kill -TERM "$(child_of "${pids[1]}")"
  wait "${pids[1]}"
  rc1=$?
  wait "${pids[0]}"
  rc0=$?
  ((rc1 == 143)) || fail "rank 1 exit $rc1, expected 143"
  one_line "$work/err1" "^railbench: error: rank 1: interrupted by SIGTERM$"
  ((rc0 == 1)) || fail "rank 0 exit $rc0, expected 1 (its peer is gone)"
  check_json "$work/r.json" failed "rank 1" 3
  ;;
crash)
  start_pair
  wait_results "$work/r.json" 3 60
  done_before=$(count_results "$work/r.json")
  kill -SEGV "$(child_of "${pids[0]}")"
  wait "${pids[0]}"
  rc0=$?
  wait "${pids[1]}"
  ((rc0 == 128 + $(signo SEGV))) || fail "rank 0 exit $rc0, expected $((128 + $(signo SEGV))) (killed by SIGSEGV)"
  check_json "$work/r.json" failed "^crashed with SIGSEGV\$" "$done_before"
  grep -q "^railbench: internal error: crashed with SIGSEGV" "$work/err0" || fail "no line about the crash"
  ;;
mpirun-*)
  what=${case_name#mpirun-}
  if [[ $what == TERM-main-stuck ]]; then
    what=TERM
    export RAILBENCH_TEST_MAIN_BLOCKS_SIGNALS=1 RAILBENCH_SIGNAL_TRACE="$work/trace"
  fi
  start_mpirun 2 allreduce -t ofi:tcp --rails lo -b 1K -e 64M -n 40 -w 1 --timeout 5 --json "$work/r.json"
  wait_results "$work/r.json" 3 60
  done_before=$(count_results "$work/r.json")
  if [[ $what == kill9 ]]; then
    kill -KILL "$(rank_pid 1)"
  else
    kill -"$what" "$mpirun_pid"
  fi
  wait_job_end
  if [[ $what == kill9 ]]; then
    # Rank 0 names the dead peer when it notices first; otherwise mpirun's SIGTERM
    # reaches it first. Either way: failed, never "running".
    check_json "$work/r.json" failed "rank 1|interrupted by SIGTERM" "$done_before"
  else
    # mpirun passes SIGTERM on to the ranks (for SIGINT too).
    check_json "$work/r.json" failed "^interrupted by SIG(TERM|INT)\$" "$done_before"
    n=$(grep -c "interrupted by" "$work/err")
    ((n == 1)) || fail "expected one 'interrupted by' line, got $n: $(cat "$work/err")"
    if [[ $case_name == *-main-stuck ]]; then
      # Both ranks: the main thread was given the signal and did not take it.
      n=$(grep -c " other main-did-not-take-it sig 15" "$work/trace")
      ((n == 2)) || fail "expected 2 ranks' verdicts written by another thread, got $n: $(cat "$work/trace")"
    fi
  fi
  ;;
stop-teardown)
  start_mpirun 4 allreduce -t ofi:tcp --rails lo -b 1K -e 64M -n 20 --timeout 5 --json "$work/r.json"
  wait_results "$work/r.json" 2 60
  stopped=$(rank_pid 2)
  kill -STOP "$stopped"
  for ((i = 0; i < 600; ++i)); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
  kill -CONT "$stopped" 2>/dev/null
  wait_job_end
  if grep -Eq "SIGSEGV|Segmentation fault|signal 11|crashed" "$work/err" "$work/out"; then
    fail "a rank crashed during teardown"
  fi
  check_json "$work/r.json" failed "." 2
  ;;
validate)
  # validate on the simulated SU (scripts/netns-su), 2 nodes x 1 rail, its own prefix;
  # SIGTERM to mpirun once the inventory is written and the pair tests run.
  case_su_up rbtsigv
  "$su/up.sh" --nodes 2 --rails 1 --rate 400 >/dev/null || fail "could not build the simulated SU"
  cat >"$work/su.json" <<EOF
{ "name": "sig-2x1", "nodes": "node[01-02]", "gpus_per_node": 1, "transport": "ofi:tcp",
  "rails": [ {"gpu": 0, "nic": "rail0", "leaf": "leaf0", "speed_gbps": 10, "line_rate_gbps": 0.4, "mtu": 1500} ],
  "tests": { "bw_bytes": "16K", "bw_window": 32, "bw_iters": 400, "lat_bytes": 8, "lat_iters": 20000,
             "collective_bytes": "1M", "collective_iters": 50, "pair_timeout_s": 8 } }
EOF
  echo "node99" >"$work/drain.txt"  # an earlier run's list, never to be taken for this one's
  set -m
  timeout --kill-after=10 120 "$su/mpirun.sh" --slots 1 -- "$rb" validate --config "$work/su.json" \
    --json "$work/r.json" --drain-list "$work/drain.txt" >"$work/out" 2>"$work/err" &
  launcher=$!
  case_started $launcher
  set +m
  for ((i = 0; i < 600; ++i)); do
    grep -q '"inventory"' "$work/r.json" 2>/dev/null && break
    kill -0 "$launcher" 2>/dev/null || fail "validate ended before it could be interrupted"
    sleep 0.1
  done
  sleep 2
  mpirun_pid=""
  for p in $(pgrep -x mpirun); do  # ours: the one whose command line has our results file
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -- "$work/r.json" >/dev/null && mpirun_pid=$p
  done
  [[ -n $mpirun_pid ]] || fail "validate's mpirun not found"
  kill -0 "$launcher" 2>/dev/null || fail "validate ended before it could be interrupted"
  kill -TERM "$mpirun_pid"
  wait_job_end
  check_json "$work/r.json" failed "^interrupted by SIGTERM\$" 0
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "inventory" in d, "inventory kept"' \
    "$work/r.json" || fail "the inventory measured before the signal was lost"
  [[ -f $work/drain.txt && ! -s $work/drain.txt ]] || fail "the drain list should be empty, it holds: $(cat "$work/drain.txt")"
  python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["bad_nodes"]; assert b["hostlist"] == "", b' \
    "$work/r.json" || fail "bad_nodes of the partial run missing or wrong"
  ;;
disk-full)
  mkdir -p "$work/fs"
  if [[ $(id -u) -ne 0 ]] || ! mount -t tmpfs -o size=64k tmpfs "$work/fs" 2>/dev/null; then
    skip "a small tmpfs needs root"
  fi
  # Leave room for the header and a few sizes: the rewrite (old file + temporary) runs out.
  head -c $((44 * 1024)) /dev/zero >"$work/fs/filler"
  timeout --kill-after=5 60 "$rb" allreduce -t ofi:tcp --rails lo -b 8 -e 1M -n 3 -w 1 --json "$work/fs/r.json" \
    >"$work/out" 2>"$work/err"
  rc=$?
  ((rc == 1)) || fail "exit $rc, expected 1 (the results could not be written)"
  one_line "$work/err" "^railbench: error: no space left on device"
  check_json "$work/fs/r.json" failed "^no space left on device" 1
  no_temporaries "$work/fs"
  ;;
special-target)
  mkfifo "$work/fifo"
  cat "$work/fifo" >"$work/from-fifo" &
  case_started $!
  reader=$!
  timeout 60 "$rb" allreduce -t ofi:tcp --rails lo -b 8 -e 64K -n 3 --json "$work/fifo" >"$work/out" 2>"$work/err" ||
    fail "run with --json FIFO exit $?"
  [[ -p $work/fifo ]] || fail "the fifo was replaced by a $(stat -c %F "$work/fifo")"
  for ((i = 0; i < 100; ++i)); do kill -0 "$reader" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$reader" 2>/dev/null && fail "nothing was written to the fifo"
  wait "$reader"
  check_json "$work/from-fifo" complete "" 1
  if [[ $(id -u) -eq 0 ]] && mknod "$work/null" c 1 3 2>/dev/null; then
    timeout 60 "$rb" allreduce -t ofi:tcp --rails lo -b 8 -e 64K -n 3 --json "$work/null" >"$work/out" 2>"$work/err" ||
      fail "run with --json DEVICE exit $?"
    [[ -c $work/null ]] || fail "the character device was replaced by a $(stat -c %F "$work/null")"
  else
    echo "(no root: the character device part is skipped)"
  fi
  no_temporaries "$work"
  ;;
symlink)
  echo "precious" >"$work/victim"
  ln -s "$work/victim" "$work/r.json.tmp"
  timeout 60 "$rb" allreduce -t ofi:tcp --rails lo -b 8 -e 64K -n 3 --json "$work/r.json" >"$work/out" 2>"$work/err" ||
    fail "run exit $?"
  [[ $(cat "$work/victim") == precious ]] || fail "the symlink's target was overwritten"
  [[ -L $work/r.json.tmp ]] || fail "the planted symlink was replaced"
  check_json "$work/r.json" complete "" 1
  ;;
json-dir)
  mkdir "$work/d"
  start=$(date +%s%N)
  timeout 30 "$rb" allreduce -t ofi:tcp --rails lo -b 8 -e 64M -n 50 --json "$work/d" >"$work/out" 2>"$work/err"
  rc=$?
  ((rc == 2)) || fail "--json DIR: exit $rc, expected 2"
  one_line "$work/err" "^railbench: error: --json '.*/d' is a directory"
  [[ ! -s $work/out ]] || fail "--json DIR ran something: $(head -3 "$work/out")"
  [[ -z $(ls -A "$work/d") && ! -e $work/d.tmp ]] || fail "--json DIR left files behind"
  timeout 30 "$rb" allreduce -t ofi:tcp --rails lo -b 8 -e 64M -n 50 --json "$work/nosuch/r.json" \
    >"$work/out" 2>"$work/err"
  rc=$?
  ((rc == 2)) || fail "--json in a missing directory: exit $rc, expected 2"
  one_line "$work/err" "^railbench: error: --json '.*/nosuch/r.json': the directory '.*/nosuch' does not exist"
  [[ ! -s $work/out ]] || fail "--json in a missing directory ran something"
  ;;
*)
  echo "unknown case $case_name"
  exit 2
  ;;
esac
echo "PASS: $case_name"

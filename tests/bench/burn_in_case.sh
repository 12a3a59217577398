#!/usr/bin/env bash
# Burn-in (--cycles / --duration, bench/runner/burn_in.h) under a real mpirun on ofi:shm.
#   burn_in_case.sh cycles CMD RAILBENCH   CMD --cycles 3: exactly 3 windows in the JSON,
#                                          one figure per link (size, pair) per window,
#                                          the summary table printed, the first window's
#                                          results kept as a plain run writes them
#   burn_in_case.sh sigterm CMD RAILBENCH  SIGTERM to mpirun in the middle of a --duration
#                                          burn-in: the JSON says failed and keeps every
#                                          window finished before the signal
# Every run has a hard deadline; only the processes this script started are killed.
source "$(dirname "$0")/../support/case.sh"
case_name=$1 cmd=$2 rb=$3
case_work

# Small sizes: a window takes well under a second on a busy 2-core host.
case $cmd in
  sendrecv) args=(sendrecv -t ofi:shm -b 8 -e 64K -n 50 -w 5 --bw-iters 4) sizes=14 ;;
  allreduce) args=(allreduce -t ofi:shm -b 1K -e 256K -n 5 -w 1) sizes=9 ;;
  *) fail "unknown command '$cmd'" ;;
esac

# Windows kept in a results file (0 when missing or unreadable).
windows() {
  python3 -c 'import json,sys
try: print(len(json.load(open(sys.argv[1]))["burn_in"]["windows"]))
except Exception: print(0)' "$1"
}

# check_burn_in FILE STATUS MIN_WINDOWS MAX_WINDOWS
check_burn_in() {
  python3 - "$@" "$sizes" "$cmd" <<'PY' || fail "burn-in results check"
import json, sys
path, status, lo, hi, sizes, cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
doc = json.load(open(path))
b = doc["burn_in"]
n = len(b["windows"])
print(f"{path}: status {doc['status']}, {n} windows, {len(b['links'])} links, {len(doc['results'])} results")
assert doc["status"] == status, doc["status"]
assert lo <= n <= hi, f"{n} windows, expected {lo}..{hi}"
assert [w["index"] for w in b["windows"]] == list(range(n))
starts = [w["start_s"] for w in b["windows"]]
assert starts == sorted(starts) and all(w["end_s"] >= w["start_s"] for w in b["windows"]), b["windows"]
assert all(w["wall"].endswith("Z") for w in b["windows"])
assert b["below_fraction"] == 0.8 and b["passes_per_window"] == 1
# The first window's results, as a run without burn-in writes them.
assert len(doc["results"]) == sizes, len(doc["results"])
want = sizes if cmd == "allreduce" else 1  # a figure per size; per pair and rail
assert len(b["links"]) == want, [l["link"] for l in b["links"]]
for l in b["links"]:
    assert len(l["values"]) == n, l
    assert all(v is not None and v > 0 for v in l["values"]), l
    assert l["min"] <= l["median"] <= l["max"], l
    assert 0 <= l["worst_window"] < n and l["values"][l["worst_window"]] == l["min"], l
    assert l["worst_at_s"] == b["windows"][l["worst_window"]]["start_s"]
    assert isinstance(l["intermittent"], bool)
if cmd == "sendrecv":
    assert b["links"][0]["link"] == "rail0 ranks 0-1" and b["links"][0]["group"] == "rail0", b["links"][0]
PY
}

case $case_name in
  cycles)
    rb_mpirun_deadline 120 2 "$rb" "${args[@]}" --cycles 3 --json "$work/r.json" >"$work/out" 2>"$work/err"
    rc=$?
    cat "$work/out"
    ((rc == 0)) || fail "exit $rc (124: the 120 s deadline)"
    check_burn_in "$work/r.json" complete 3 3
    python3 "$here/check_results.py" "$work/r.json" --ranks 2 --command "$cmd" --sizes "$sizes" ||
      fail "the results beside the burn-in are not those of a plain run"
    # A line per pass, at most every 2 s: the first at least.
    grep -q '^# burn-in pass 1 at +' "$work/out" || fail "no line for the first pass"
    grep -q '^# burn-in summary: .*3 window(s)' "$work/out" || fail "no burn-in summary table"
    grep -q '^# burn-in: [0-9]* intermittent link(s) of [0-9]*$' "$work/out" || fail "no intermittent count line"
    ;;
  sigterm)
    set -m
    rb_mpirun 2 "$rb" "${args[@]}" --duration 5m --json "$work/r.json" >"$work/out" 2>"$work/err" &
    launcher=$!
    case_started "$launcher"
    set +m
    mpirun_pid=""
    for ((i = 0; i < 100; ++i)); do
      mpirun_pid=$(pgrep -P "$launcher" -x mpirun) && break
      sleep 0.1
    done
    [[ -n $mpirun_pid ]] || fail "mpirun did not start"
    case_started "$mpirun_pid"
    for ((i = 0; i < 600; ++i)); do
      (($(windows "$work/r.json") >= 2)) && break
      sleep 0.1
    done
    done_before=$(windows "$work/r.json")
    ((done_before >= 2)) || fail "2 windows not written within 60 s"
    rank_pids=$(pgrep -P "$mpirun_pid" -d ' ')
    kill -TERM "$mpirun_pid"
    for ((i = 0; i < 300; ++i)); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$launcher" 2>/dev/null && fail "the job still runs 30 s after SIGTERM"
    wait "$launcher"
    echo "mpirun exit $? after $done_before window(s)"
    check_burn_in "$work/r.json" failed "$done_before" 100000
    python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; print("error:", e); assert "SIGTERM" in e' \
      "$work/r.json" || fail "the results file does not say SIGTERM ended the run"
    # Neither the handler's temporary nor the one a rewrite had open is left behind.
    leftovers=$(ls "$work"/r.json.tmp.* 2>/dev/null)
    [[ -z $leftovers ]] || fail "temporary files left beside the results: $leftovers"
    # Nor the shm provider's regions (/dev/shm/PID:N:N): they go when a rank ends on its
    # signal, and stay when Open MPI's SIGKILL cuts it off (as it did before the other
    # ranks waited for rank 0: lib/runtime/signals.h).
    for pid in $rank_pids; do
      regions=$(ls /dev/shm/"$pid":* 2>/dev/null)
      [[ -z $regions ]] || fail "a signalled rank left its shm region: $regions"
    done
    [[ -n $rank_pids ]] || fail "no rank processes found under mpirun"
    ;;
  *) fail "unknown case '$case_name'" ;;
esac
echo "PASS: $case_name $cmd"

# shellcheck shell=bash
# What the store's cases share (source it after tests/support/case.sh):
#   db_runs FIXTURE N [SLOWER]  N copies of a validate results file as $work/run1.json ..
#                               runN.json, each its own run (run_id, one day apart); with
#                               SLOWER (a fraction), node03 rail1 that much slower each run
#   db_ingest_at_once STORE N   `railbench db ingest` of run1..runN into STORE, all at once
#                               ($rb); fails naming the ingest that failed
db_runs() {
  local fixture=$1 n=$2 slower=${3:-0} i
  for ((i = 1; i <= n; i++)); do
    python3 - "$fixture" "$work/run$i.json" "$i" "$slower" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
i, slower = int(sys.argv[3]), float(sys.argv[4])
d["run_id"] = "%032x" % i
d["started_at"] = "2026-11-%02dT10:00:00Z" % i
if slower:
    for link in d["rails"][1]["links"]:
        if link["node"] == "node03":
            link["tx_gbs"] *= 1 - slower * i
            link["rx_gbs"] *= 1 - slower * i
json.dump(d, open(sys.argv[2], "w"))
PY
  done
}

db_ingest_at_once() {
  local store=$1 n=$2 i pids=()
  for ((i = 1; i <= n; i++)); do
    "$rb" db ingest --db "$store" "$work/run$i.json" >"$work/ingest$i.out" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || fail "ingest $((i + 1)) of $n into $store failed"
  done
}

#!/usr/bin/env bash
# kvcache --serve --pin-rails under a real mpirun: 1 prefill + 1 decode rank over 2 tcp
# rails with 2 requests in flight, so slot 0 runs on rail 0 and slot 1 on rail 1; every
# block checked at the decode side (-c), with a hard deadline:
#   serve_rails.sh write|send RAILBENCH
# The results have one per-rail entry per rail, each with its share of the requests and
# their times, and no wrong byte.
source "$(dirname "$0")/../support/case.sh"
protocol=$1 rb=$2
case_work
rb_mpirun_deadline 60 2 "$rb" kvcache --serve -t ofi:tcp --rails lo,lo --protocol "$protocol" --layers 2 \
  --kv-heads 1 --head-dim 8 --tokens 64 --mode per-block -c --concurrency 2 --rate 100 --requests 40 --pin-rails \
  --json "$work/r.json" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out" "$work/err"
((rc == 0)) || fail "exit code $rc (124: the 60 s deadline)"
python3 - "$work/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["results"][-1]
if not d["config"]["pin_rails"]:
    sys.exit("FAIL: config.pin_rails is not set")
rails = e.get("per_rail") or []
if [r["rail"] for r in rails] != [0, 1]:
    sys.exit(f"FAIL: per_rail {rails}")
if sum(r["requests"] for r in rails) != e["requests"] or any(r["requests"] == 0 for r in rails):
    sys.exit(f"FAIL: {[r['requests'] for r in rails]} requests per rail of {e['requests']}")
for r in rails:
    t = r["total_us"]
    if not (0 < t["p50"] <= t["p99"]) or r["request_us"]["p50"] <= 0:
        sys.exit(f"FAIL: rail {r['rail']} times {r}")
if e["wrong"] != 0:
    sys.exit(f"FAIL: {e['wrong']} wrong bytes")
print("PASS: requests per rail", [r["requests"] for r in rails])
PY

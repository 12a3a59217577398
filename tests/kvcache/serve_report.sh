#!/usr/bin/env bash
# railbench report on a kvcache --serve --find-max-rate run (2 ranks, shm, a real mpirun
# with a hard deadline): the kvcache section draws total time against offered load with
# the knee at the JSON's max_rate, and lists every probe with the knee's rows marked.
#   serve_report.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_work
rb_mpirun_deadline 60 2 "$rb" kvcache --serve --find-max-rate -t ofi:shm --layers 2 --kv-heads 1 --head-dim 8 \
  --tokens 16 --mode per-block --slo p99:2s --probe-warmup 0.2 --probe-duration 0.5 --probe-requests 100 \
  --json "$work/r.json" >"$work/out" 2>&1
rc=$?
cat "$work/out"
((rc == 0)) || fail "exit code $rc (124: the 60 s deadline)"
"$rb" report "$work/r.json" -o "$work/r.html" || fail "report"
python3 - "$work/r.json" "$work/r.html" <<'PY' || exit 1
import json, re, sys
m = json.load(open(sys.argv[1]))["max_rate"]
page = open(sys.argv[2]).read()
assert 'id="kvcache-max-rate"' in page, "no latency-against-load section"
knee = re.search(r"knee: max rate meeting p99:2s \(([0-9.,]+) req/s\)", page)
assert knee, "the knee is not marked"
print(f"knee drawn at {knee.group(1)} req/s, JSON max_rate {m['max_rate']}")
assert abs(float(knee.group(1).replace(",", "")) - m["max_rate"]) <= 0.01 * m["max_rate"]
rows = page.count("met (knee)")
assert rows == sum(1 for p in m["curve"] if p["rate"] == m["max_rate"]) and rows >= 1
assert page.count("<tr") >= len(m["curve"]) + 1, "a probe is missing from the table"
print("PASS")
PY

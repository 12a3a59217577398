#!/usr/bin/env bash
# validate --csv and its progress lines on the simulated SU (scripts/netns-su, 4 nodes x
# 2 rails, node03 rail1 degraded): the CSV, read with python's csv module, has one row
# per link matching the JSON, the degraded link's row says FAIL; stderr (a file) has one
# line per phase and rail-check round, with the time left. Exit 77 without namespaces.
#   csv_progress_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_su_up rbtcsv
"$su/up.sh" --nodes 4 --rails 2 --rate 400 || fail "could not build the simulated SU"

"$su/fault.sh" degrade node03 rail1 20
timeout --kill-after=10 300 "$su/mpirun.sh" --slots 2 -- \
  "$rb" validate --config netns-4x2 --json "$work/v.json" --csv "$work/v.csv" >"$work/out" 2>"$work/err"
rc=$?
grep -v '^--\|^ *$' "$work/out"
((rc == 1)) || fail "a degraded link must fail the SU with exit 1 (exit $rc)"
echo "--- the CSV"
cat "$work/v.csv"
python3 "$here/../bench/check_csv.py" "$work/v.json" "$work/v.csv" || exit 1
python3 - "$work/v.csv" <<'PY' || fail "the CSV does not name the degraded link"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == 8, len(rows)
bad = [(r["node"], r["rail"]) for r in rows if r["verdict"] == "FAIL"]
assert bad == [("node03", "1")], bad
row = next(r for r in rows if r["node"] == "node03" and r["rail"] == "1")
assert "bandwidth" in row["findings"], row
PY
echo "--- stderr (a file: one line per step)"
cat "$work/err"
p='^validate: phase 2 rail checks, round ([1-3])/3, [0-9]{2}:[0-9]{2} elapsed, ~[0-9:]+ left$'
[[ $(grep -Ec "$p" "$work/err") == 3 ]] || fail "expected rail-check rounds 1/3, 2/3, 3/3 once each"
for step in "phase 1 inventory" "phase 3 cross-rail spot checks" "phase 4 re-tests, round 1/" "phase 5 collectives"; do
  [[ $(grep -c "^validate: $step" "$work/err") == 1 ]] || fail "no single line for '$step'"
done
echo PASS

#!/usr/bin/env bash
# validate --db postgresql://... under mpirun on the simulated SU (scripts/netns-su, 4 x
# 2), against a throwaway server (pg.sh) whose database holds six earlier runs of the SU
# (the healthy fixture, node03 rail1 a little slower in each). validate reads the store
# before it starts (each link against its own last runs and the SU's) and writes into it
# when it ends: the run passes (a healthy SU is under none of its history), its history
# line says 8 links were judged over 6 runs, and the run is the store's seventh, there
# once, in the history of a NIC.
#   postgres_validate_case.sh RAILBENCH
# Exit 77 (ctest: skipped) when this host cannot make network namespaces (not root).
source "$(dirname "$0")/../support/case.sh"
source "$(dirname "$0")/runs.sh"
source "$(dirname "$0")/pg.sh"
rb=$1
case_su_up rbpgv
fixtures=$rb_root/tests/compare/fixtures
pg_up su
store=$(pg_url su)

db_runs "$fixtures/validate-netns-healthy.json" 6 0.02
for i in 1 2 3 4 5 6; do
  "$rb" db ingest --db "$store" "$work/run$i.json" >>"$work/ingest.out" 2>&1 || fail "ingest of run $i failed"
done
"$su/up.sh" --nodes 4 --rails 2 --rate 400 >/dev/null || fail "could not build the simulated SU"
timeout --kill-after=10 300 "$su/mpirun.sh" --slots 2 -- "$rb" validate --config netns-4x2 \
  --json "$work/v.json" --db "$store" >"$work/v.out" 2>"$work/v.err"
rc=$?
grep -E '^# (history|verdict)' "$work/v.out"
cat "$work/v.err"
((rc == 0)) || fail "validate --db postgresql:// on a healthy SU exited $rc"
expect_grep "^# history postgresql://railbench@/su.*: 8 link\(s\) judged .* over 6 run\(s\)" "$work/v.out" \
  "the history line: every link judged against the six runs read from PostgreSQL"
expect_grep "run store postgresql://railbench@/su.*: run [0-9a-f]{32} added" "$work/v.err" "the run put into the store"
run_id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$work/v.json")
"$rb" db info --db "$store" | tee "$work/info.out"
expect_grep '^ +runs +7$' "$work/info.out" "six runs before and this one"
"$rb" history node01:rail0 --db "$store" --json >"$work/history.json" || fail "history on PostgreSQL failed"
python3 - "$work/history.json" "$run_id" <<'PY' || fail "history node01:rail0 does not end with the validate run, once"
import json, sys
d = json.load(open(sys.argv[1]))
keys = [r["run"] for r in d["things"][0]["runs"]]
print("runs:", len(keys))
assert len(keys) == 7 and keys.count(sys.argv[2]) == 1 and keys[-1] == sys.argv[2], keys
PY
echo "db postgres validate: as expected"

#!/usr/bin/env bash
# The run store with real processes:
#   1. eight `railbench db ingest` at once into one new store, each its own run: all
#      eight runs there, none lost (WAL, busy timeout, one transaction per run);
#   2. a run under mpirun with --db on a damaged store: the run's exit code and results
#      file are unaffected, one line names the store problem and the command that
#      ingests the file later; `db ingest` into that store is exit 1, one line;
#   3. --db without --json: the results file is written beside the store and ingested;
#   4. history of a thing the store has not seen is exit 2 naming the forms it takes;
#   5. report --db draws the history of the things named (or those its findings name).
#   store_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
source "$rb_root/scripts/lib/mpirun.sh"
source "$(dirname "$0")/runs.sh"
rb=$1
case_work
fixtures=$rb_root/tests/compare/fixtures

echo "== 1. eight ingests at once"
db_runs "$fixtures/validate-netns-healthy.json" 8
db_ingest_at_once "$work/fleet.db" 8
"$rb" db info --db "$work/fleet.db" | tee "$work/info.out"
grep -qE '^ +runs +8$' "$work/info.out" || fail "eight runs ingested at once, but the store does not hold eight"
grep -qE '^ +figures +448$' "$work/info.out" || fail "eight runs of 56 figures each should be 448 figures"
grep -qE '^ +pair_tests +128$' "$work/info.out" || fail "eight runs of 16 pair tests each should be 128 pair tests"

echo "== 2. a damaged store: the run is unaffected"
printf 'not a database, only text long enough to fill a header page\n' >"$work/damaged.db"
rb_mpirun 2 "$rb" allreduce -t ofi:shm -b 1K -e 4K -n 5 -q --json "$work/ar.json" --db "$work/damaged.db" \
  >"$work/ar.out" 2>"$work/ar.err"
rc=$?
cat "$work/ar.err"
((rc == 0)) || fail "allreduce with an unusable store exited $rc: the store must not change the run's exit code"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["status"] == "complete", d["status"]' \
  "$work/ar.json" || fail "the results file is not complete"
[[ $(grep -c 'warning: --db' "$work/ar.err") -eq 1 ]] || fail "expected one line naming the store problem"
grep -q "damaged.db.*db ingest $work/ar.json" "$work/ar.err" || fail "the line must name the store and the command that ingests the file later"
"$rb" db ingest --db "$work/damaged.db" "$work/ar.json" >"$work/di.out" 2>&1
rc=$?
cat "$work/di.out"
((rc == 1)) || fail "db ingest into a damaged store exited $rc, expected 1"
[[ $(wc -l <"$work/di.out") -eq 1 ]] || fail "expected one error line"

echo "== 3. --db without --json"
RAILBENCH_DB=$work/env/fleet.db rb_mpirun 2 "$rb" allreduce -t ofi:shm -b 1K -e 4K -n 5 -q --db \
  >"$work/env.out" 2>"$work/env.err" || { cat "$work/env.err"; fail "allreduce --db failed"; }
ls "$work"/env/results/allreduce-*.json >/dev/null 2>&1 || fail "no results file beside the store"
grep -q "run store $work/env/fleet.db: run .* added" "$work/env.err" || fail "the run was not ingested"
"$rb" history --db "$work/env/fleet.db" "allreduce 4K" | tee "$work/hist.out"
grep -q 'busbw' "$work/hist.out" || fail "history of the collective lists no busbw"

echo "== 4. history of an unknown thing"
"$rb" history --db "$work/fleet.db" node99:rail7 >"$work/unknown.out" 2>&1
rc=$?
cat "$work/unknown.out"
((rc == 2)) || fail "history of an unknown thing exited $rc, expected 2"
grep -q "node03:rail1" "$work/unknown.out" || fail "the error must show the forms a thing is named in"
echo "== 5. report --db: the history section"
"$rb" report "$fixtures/validate-netns-slow.json" --db "$work/fleet.db" --history node03:rail1 -o "$work/r.html" ||
  fail "report --db --history failed"
expect_grep '<h3>nic node03:rail1: 8 run\(s\), oldest first</h3>' "$work/r.html" "the history of node03:rail1"
points=$(grep -o '<title>tx/rail: run [0-9]* &#8594; [0-9.]*</title>' "$work/r.html" | wc -l)
expect_eq "tx/rail points drawn, one per run" 8 "$points"
"$rb" report "$fixtures/validate-netns-slow.json" --db "$work/fleet.db" -o "$work/r2.html" ||
  fail "report --db failed"
expect_grep '<h3>nic node03:rail1: ' "$work/r2.html" "report --db draws the NIC its findings name"
"$rb" report "$fixtures/validate-netns-slow.json" --history node99:rail7 --db "$work/fleet.db" -o "$work/r3.html" \
  >"$work/r3.out" 2>&1
rc=$?
expect_eq "report --history of an unknown thing: exit code" 2 "$rc"
echo "db store: as expected"

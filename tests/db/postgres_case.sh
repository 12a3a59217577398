#!/usr/bin/env bash
# The run store on PostgreSQL, against a throwaway server this case starts (pg.sh: a
# Unix socket only, as the postgres user when run as root, stopped at exit):
#   1. eight `railbench db ingest` at once into one new database, each its own run, with
#      node03:rail1 a little slower in each: all eight runs there, none lost;
#   2. the same eight files one by one into a SQLite store: db info's counts, history of
#      the NIC and of a pair link, and db trends answer the same on both engines, and
#      trends names the NIC that drifts;
#   3. runs under mpirun with --db postgresql://...: each is ingested, the schema made once;
#   4. a server that is not there: the run's exit code and results file are unaffected,
#      one line names the URL without its password and the fix; db ingest exits 1.
#   postgres_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
source "$(dirname "$0")/runs.sh"
source "$(dirname "$0")/pg.sh"
rb=$1
case_work
fixtures=$rb_root/tests/compare/fixtures

pg_up fleet jobs
fleet=$(pg_url fleet)
jobs=$(pg_url jobs)

echo "== 1. eight ingests at once, node03:rail1 slower in each run"
db_runs "$fixtures/validate-netns-healthy.json" 8 0.04
db_ingest_at_once "$fleet" 8
"$rb" db info --db "$fleet" | tee "$work/pg-info.out"
expect_grep '^ +runs +8$' "$work/pg-info.out" "eight runs ingested at once"
expect_grep '^ +pair_tests +128$' "$work/pg-info.out" "eight runs of 16 pair tests each"

echo "== 2. the same answers from SQLite"
for i in 1 2 3 4 5 6 7 8; do
  "$rb" db ingest --db "$work/fleet.db" "$work/run$i.json" >>"$work/sqlite-ingest.out" 2>&1 ||
    fail "ingest $i into SQLite failed"
done
"$rb" db info --db "$work/fleet.db" >"$work/sqlite-info.out" || fail "db info on SQLite failed"
queries=("history node03:rail1" "history node01:rail0-node04:rail0" "db trends --since all")
for q in "${queries[@]}"; do
  read -ra args <<<"$q"
  "$rb" "${args[@]}" --db "$fleet" >"$work/pg-q.out" 2>&1 || fail "'$q' on PostgreSQL failed"
  "$rb" "${args[@]}" --db "$work/fleet.db" >"$work/sqlite-q.out" 2>&1 || fail "'$q' on SQLite failed"
  # The store's own name differs; nothing else may.
  diff <(grep -v -e "$pgdir" -e "$work/fleet.db" "$work/pg-q.out") \
    <(grep -v -e "$pgdir" -e "$work/fleet.db" "$work/sqlite-q.out") >"$work/diff.out" ||
    fail "'$q' answers differently on PostgreSQL and SQLite: $(cat "$work/diff.out")"
  cat "$work/pg-q.out"
done
"$rb" db trends --since all --db "$fleet" >"$work/trends.out" 2>&1
expect_grep 'node03:rail1' "$work/trends.out" "trends on PostgreSQL naming the NIC that drifts"
diff <(grep -E '^ +[a-z_]+ +[0-9]+$' "$work/pg-info.out") <(grep -E '^ +[a-z_]+ +[0-9]+$' "$work/sqlite-info.out") ||
  fail "db info counts differ between PostgreSQL and SQLite"

echo "== 3. runs with --db postgresql://"
for n in 1 2; do
  rb_mpirun 2 "$rb" allreduce -t ofi:shm -b 1K -e 4K -n 5 -q --json "$work/ar$n.json" --db "$jobs" \
    >"$work/ar$n.out" 2>"$work/ar$n.err" || fail "allreduce --db postgresql:// run $n failed"
  expect_grep "run store postgresql://railbench@/jobs.*: run .* added" "$work/ar$n.err" "run $n ingested"
done
"$rb" history --db "$jobs" "allreduce 4K" | tee "$work/hist.out"
[[ $(grep -c 'busbw' "$work/hist.out") -ge 2 ]] || fail "history of the collective does not list both runs"

echo "== 4. a server that is not there"
gone="postgresql://railbench:hunter2@/fleet?host=$work/no-server&connect_timeout=5"
rb_mpirun 2 "$rb" allreduce -t ofi:shm -b 1K -e 4K -n 5 -q --json "$work/gone.json" --db "$gone" \
  >"$work/gone.out" 2>"$work/gone.err"
rc=$?
cat "$work/gone.err"
((rc == 0)) || fail "allreduce with an unreachable store exited $rc: the store must not change the run's exit code"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["status"] == "complete"' "$work/gone.json" ||
  fail "the results file is not complete"
[[ $(grep -c 'warning: --db' "$work/gone.err") -eq 1 ]] || fail "expected one line naming the store problem"
expect_grep 'cannot connect.*start the server' "$work/gone.err" "the line names the problem and the fix"
expect_grep 'db ingest' "$work/gone.err" "the line names the command that ingests the file later"
! grep -q hunter2 "$work/gone.err" "$work/gone.out" || fail "the password was printed"
"$rb" db ingest --db "$gone" "$work/gone.json" >"$work/gi.out" 2>&1
rc=$?
cat "$work/gi.out"
((rc == 1)) || fail "db ingest into an unreachable server exited $rc, expected 1"
! grep -q hunter2 "$work/gi.out" || fail "the password was printed"
echo "db postgres: as expected"

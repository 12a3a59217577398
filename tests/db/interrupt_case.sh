#!/usr/bin/env bash
# `railbench db ingest` of a large validate file (256 x 8, 261,120 pair tests, written by
# validate's own writer) ended by a signal in the middle of its transaction, once by
# SIGTERM and once by SIGKILL. The middle: the store's WAL has grown past 2 MB (SQLite
# spills the open transaction's pages there long before its commit; the whole run is
# about 15 MB). After each: the store passes PRAGMA integrity_check, holds none of that
# run (no row of it in any table: the counts are those from before), and SIGTERM's
# ingest has ended within seconds with exit 143 and one line saying that the run was
# rolled back and what to run. Then the same ingest, uninterrupted, puts the run in
# once, and a second one finds it there.
#   interrupt_case.sh RAILBENCH RESULTS_SCALE
source "$(dirname "$0")/../support/case.sh"
source "$(dirname "$0")/runs.sh"
rb=$1
scale=$2
case_work
fixtures=$rb_root/tests/compare/fixtures
store=$work/fleet.db
big=$work/su256x8.json

"$scale" "$big" --nodes 256 --rails 8 >"$work/scale.out" || fail "could not write the large validate file"
db_runs "$fixtures/validate-netns-healthy.json" 1
run_id=$(grep -o -m 1 '"run_id": *"[0-9a-f]*"' "$big" | grep -o '[0-9a-f]\{32\}')
[[ -n $run_id ]] || fail "the large file has no run_id"
"$rb" db ingest --db "$store" "$work/run1.json" >/dev/null || fail "the first run did not go into the store"
counts() { "$rb" db info --db "$store" | grep -E '^ +[a-z_]+ +[0-9]+$'; }
counts >"$work/before.txt"
cat "$work/before.txt"

# Starts the ingest of the large file, waits until its transaction has written 2 MB to
# the WAL, and sends signal $1; leaves its exit code in $rc and the seconds from the
# signal to its end in $took.
ingest_and_signal() {
  local sig=$1 pid size sent
  size=$(stat -c %s "$store-wal" 2>/dev/null || echo 0)
  ((size < 1024 * 1024)) || fail "a WAL of $size bytes is left from before: the 2 MB mark would not be this ingest's"
  "$rb" db ingest --db "$store" "$big" >"$work/$sig.out" 2>"$work/$sig.err" &
  pid=$!
  case_started "$pid"
  for ((i = 0; i < 6000; i++)); do
    size=$(stat -c %s "$store-wal" 2>/dev/null || echo 0)
    ((size > 2 * 1024 * 1024)) && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  ((size > 2 * 1024 * 1024)) || fail "the ingest ended (or took a minute) before its transaction wrote 2 MB"
  sent=$(date +%s.%N)
  kill "-$sig" "$pid"
  wait "$pid" 2>/dev/null  # (bash's own "Killed" notice)
  rc=$?
  took=$(python3 -c "import sys, time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$sent")
  cat "$work/$sig.err"
}

# The store whole, with the counts from before and no row of the large run.
store_unchanged() {
  python3 - "$store" "$run_id" <<'PY' || fail "after $1 the store is damaged, or holds part of the interrupted run"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
check = db.execute("PRAGMA integrity_check").fetchall()
assert check == [("ok",)], check
run_id = sys.argv[2]
assert db.execute("SELECT count(*) FROM runs WHERE run_key = ?", (run_id,)).fetchone()[0] == 0, "the run is there"
print("integrity_check ok, no run", run_id)
PY
  counts >"$work/after.txt"
  diff "$work/before.txt" "$work/after.txt" || fail "after $1 the store's counts changed"
}

echo "== 1. SIGTERM in the middle of the transaction"
ingest_and_signal TERM
expect_eq "db ingest ended by SIGTERM: exit code" 143 "$rc"
expect_eq "lines on stderr" 1 "$(wc -l <"$work/TERM.err")"
expect_grep "railbench: error: run store $store: interrupted by SIGTERM while putting $big in: its transaction was rolled back, the store holds nothing of that run \(0 file\(s\) before it went in\); run the same railbench db ingest again" \
  "$work/TERM.err" "the line says the run was rolled back and what to run"
python3 -c "import sys; assert float(sys.argv[1]) < 5, sys.argv[1]" "$took" ||
  fail "SIGTERM took $took s to end the ingest: the rollback must be prompt"
echo "ended ${took} s after SIGTERM"
store_unchanged SIGTERM

echo "== 2. SIGKILL in the middle of the transaction"
ingest_and_signal KILL
expect_eq "db ingest ended by SIGKILL: exit code" 137 "$rc"
store_unchanged SIGKILL

echo "== 3. the same ingest again: the run once"
"$rb" db ingest --db "$store" "$big" "$big" >"$work/again.out" 2>&1 || fail "the ingest after the signals failed"
cat "$work/again.out"
expect_grep '1 run\(s\) added, 1 already there' "$work/again.out" "the run put in once"
counts >"$work/final.txt"
cat "$work/final.txt"
expect_grep '^ +runs +2$' "$work/final.txt" "two runs in the store"
expect_grep '^ +pair_tests +261136$' "$work/final.txt" "16 pair tests of the first run and 261,120 of the large one"
echo "db interrupt: as expected"

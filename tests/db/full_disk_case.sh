#!/usr/bin/env bash
# The run store on a full disk: a 256 KiB tmpfs mounted in the case's folder (as root),
# the store on it with one run in, then a file filling the rest:
#   1. 32 KiB left (room for SQLite's WAL index, not for a run's pages: the ingest's
#      writes fail with SQLITE_FULL): a run under mpirun with --db keeps its exit code and
#      its whole results file, and prints one line naming the full disk, the folder to
#      free and the command that ingests the file later; `db ingest` of that file is
#      exit 1 with one line naming the full disk;
#   2. no room at all (opening the store fails with ENOSPC): `db ingest` the same;
#   3. the filler removed: the store passes PRAGMA integrity_check, holds what it held
#      before (counts unchanged, no row of the refused run), and takes the run, once.
#   full_disk_case.sh RAILBENCH
# Exit 77 (ctest: skipped) when not root, or where a tmpfs cannot be mounted.
source "$(dirname "$0")/../support/case.sh"
source "$(dirname "$0")/runs.sh"
rb=$1
case_work
fixtures=$rb_root/tests/compare/fixtures
((EUID == 0)) || skip "a full disk is a small tmpfs this case mounts, which needs root: run it as root"
small=$work/small
mkdir "$small"
mount -t tmpfs -o size=256k railbench-full "$small" 2>"$work/mount.err" ||
  skip "cannot mount a tmpfs here ($(cat "$work/mount.err")): a full disk cannot be made"
case_on_exit "umount '$small'"
store=$small/fleet.db

# The store's rows per table, as db info prints them.
counts() { "$rb" db info --db "$store" | grep -E '^ +[a-z_]+ +[0-9]+$'; }
# Fills the tmpfs but for $1 KiB.
leave_free() {
  rm -f "$small/fill"
  local avail
  avail=$(df --output=avail -k "$small" | tail -n 1)
  ((avail > $1)) || fail "the tmpfs has only $avail KiB free, less than the $1 KiB to leave"
  head -c $(((avail - $1) * 1024)) /dev/zero >"$small/fill" || fail "could not fill the tmpfs"
  expect_eq "KiB left free on the tmpfs" "$1" "$(df --output=avail -k "$small" | tail -n 1 | tr -d ' ')"
}
# One error line for `db ingest` of $1 into the full store, exit 1, naming the full disk.
ingest_refused() {
  "$rb" db ingest --db "$store" "$1" >"$work/di.out" 2>&1
  local rc=$?
  cat "$work/di.out"
  expect_eq "db ingest into a full disk: exit code" 1 "$rc"
  expect_eq "db ingest into a full disk: lines" 1 "$(wc -l <"$work/di.out")"
  expect_grep "run store $store: the disk is full .*: free space in $small, or give a store on another disk" \
    "$work/di.out" "the line names the full disk and the fix"
}

db_runs "$fixtures/validate-netns-healthy.json" 1
"$rb" db ingest --db "$store" "$work/run1.json" >/dev/null || fail "the first run did not go into the store"
counts >"$work/before.txt"
cat "$work/before.txt"

echo "== 1. 32 KiB left: the ingest's writes fail (SQLITE_FULL)"
leave_free 32
rb_mpirun 2 "$rb" allreduce -t ofi:shm -b 1K -e 4K -n 5 -q --json "$work/ar.json" --db "$store" \
  >"$work/ar.out" 2>"$work/ar.err"
rc=$?
cat "$work/ar.err"
((rc == 0)) || fail "allreduce with its store on a full disk exited $rc: the store must not change the run's exit code"
python3 - "$work/ar.json" <<'PY' || fail "the results file is not whole"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "complete", d["status"]
assert [r["bytes"] for r in d["results"]] == [1024, 2048, 4096], [r["bytes"] for r in d["results"]]
PY
expect_eq "lines naming the store problem" 1 "$(grep -c 'warning: --db' "$work/ar.err")"
expect_grep "warning: --db: run store $store: the disk is full \(.*database or disk is full\): free space in $small" \
  "$work/ar.err" "the line names SQLITE_FULL and the folder to free"
expect_grep "db ingest $work/ar.json --db $store" "$work/ar.err" "the line names the command that ingests the file later"
ingest_refused "$work/ar.json"

echo "== 2. no room at all: opening the store fails (ENOSPC)"
leave_free 0
ingest_refused "$work/ar.json"
expect_grep 'No space left on device' "$work/di.out" "the line names ENOSPC"

echo "== 3. space again: the store is whole, without the refused run, and takes it once"
rm -f "$small/fill"
python3 - "$store" "$work/ar.json" <<'PY' || fail "the store is damaged, or holds part of the refused run"
import json, sqlite3, sys
run_id = json.load(open(sys.argv[2]))["run_id"]
db = sqlite3.connect(sys.argv[1])
check = db.execute("PRAGMA integrity_check").fetchall()
print("integrity_check:", check)
assert check == [("ok",)], check
assert db.execute("SELECT count(*) FROM runs WHERE run_key = ?", (run_id,)).fetchone()[0] == 0, "the refused run is there"
PY
counts >"$work/after.txt"
diff "$work/before.txt" "$work/after.txt" || fail "the store's counts changed though every ingest was refused"
"$rb" db ingest --db "$store" "$work/ar.json" "$work/ar.json" >"$work/again.out" 2>&1 ||
  fail "db ingest with space again failed"
cat "$work/again.out"
expect_grep '1 run\(s\) added, 1 already there' "$work/again.out" "the run taken once"
counts | grep -E '^ +runs +2$' >/dev/null || fail "the store should hold two runs"
echo "db full disk: as expected"

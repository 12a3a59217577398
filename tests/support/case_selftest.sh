#!/usr/bin/env bash
# The case library's own check (tests/support/case.sh): a failing case says what it
# expected, what came, and the tail of its logs, exits 1 and leaves no work folder; a
# deadline ends a hung command or function with 124; skip exits 77.
source "$(dirname "$0")/case.sh"
case_work
lib="$here/case.sh"

# child NAME BODY: a case script that sources the library and runs BODY.
child() {
  printf 'source %q\n%s\n' "$lib" "$2" >"$work/$1.sh"
  bash "$work/$1.sh" >"$work/$1.got" 2>&1
}

# A failing expect_eq, with a log longer than the tail.
child eq 'case_work; echo "$work" >'"$work"'/eq.work
for i in $(seq 1 50); do echo "rank0 line $i"; done >"$work/rank0.err"
: >"$work/empty.out"
expect_eq "the answer" 42 41'
rc=$?
cat "$work/eq.got"
expect_eq "exit code of a failing case" 1 "$rc"
grep -Fx "FAIL: the answer: expected '42', got '41'" "$work/eq.got" >/dev/null || fail "no 'expected ... got' line"
grep -Fx -- "--- last lines of rank0.err" "$work/eq.got" >/dev/null || fail "no header naming the log"
grep -Fx "rank0 line 50" "$work/eq.got" >/dev/null || fail "the log's last line is missing"
grep -Fx "rank0 line 21" "$work/eq.got" >/dev/null || fail "the tail is shorter than 30 lines"
grep -Fx "rank0 line 20" "$work/eq.got" >/dev/null && fail "more than the tail: line 20 of 50 is shown"
grep -F "empty.out" "$work/eq.got" >/dev/null && fail "an empty log is shown"
[[ -d $(cat "$work/eq.work") ]] && fail "the failing case's work folder is left behind"

# expect_grep names the pattern and the file; case_logs chooses the logs.
child grep 'case_work; echo hello >"$work/run.out"; echo noise >"$work/other.err"; case_logs "$work/run.out"
expect_grep "^bye" "$work/run.out" "the goodbye"'
rc=$?
cat "$work/grep.got"
expect_eq "exit code of expect_grep" 1 "$rc"
grep -Fx "FAIL: the goodbye: expected a line matching /^bye/ in run.out" "$work/grep.got" >/dev/null || fail "expect_grep's line"
grep -Fx "hello" "$work/grep.got" >/dev/null || fail "the chosen log is not shown"
grep -F "noise" "$work/grep.got" >/dev/null && fail "a log left out by case_logs is shown"

# with_deadline: a program and a shell function, both ended at the deadline.
child deadline 'hang() { sleep 30; }
start=$SECONDS
with_deadline 1 sleep 30; a=$?
with_deadline 1 hang; b=$?
with_deadline 5 true; c=$?
echo "rc $a $b $c in $((SECONDS - start)) s"
((a == 124 && b == 124 && c == 0 && SECONDS - start < 10))'
rc=$?
cat "$work/deadline.got"
expect_eq "with_deadline on a program, a function and a quick command" 0 "$rc"

# skip, and the processes a case started are killed at its exit.
child skip 'case_work; sleep 60 & case_started $!; echo $! >'"$work"'/skip.pid; skip "no device"'
rc=$?
expect_eq "exit code of skip" 77 "$rc"
grep -Fx "SKIP: no device" "$work/skip.got" >/dev/null || fail "skip's line"
# Killed: gone, or a zombie until whoever inherited it reaps it.
alive() { [[ -e /proc/$1 ]] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null; }
for _ in $(seq 50); do alive "$(cat "$work/skip.pid")" || break; sleep 0.1; done
alive "$(cat "$work/skip.pid")" && fail "a started process outlived its case"
echo "PASS: fail, expect_eq, expect_grep, with_deadline, skip, case_started"

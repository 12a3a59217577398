#!/usr/bin/env bash
# The set-up scripts refuse a bad argument with one line and exit 2, before they install
# or build anything: install-deps.sh's --for and build.sh's --target.
source "$(dirname "$0")/../support/case.sh"
case_work
root=$(cd "$here/../.." && pwd)
"$root/scripts/install-deps.sh" --for bogus >"$work/out" 2>"$work/err"
rc=$?
expect_eq "install-deps.sh --for bogus exit" 2 "$rc"
expect_grep "'bogus' is not one of run, build, deb, test, all" "$work/err" "install-deps.sh --for bogus"
"$root/scripts/install-deps.sh" --frobnicate >"$work/out" 2>"$work/err"
rc=$?
expect_eq "install-deps.sh --frobnicate exit" 2 "$rc"
expect_grep "unknown argument '--frobnicate'" "$work/err" "install-deps.sh --frobnicate"
RAILBENCH_BUILD_DIR="$work/never" "$root/scripts/build.sh" --target >"$work/out" 2>"$work/err"
rc=$?
expect_eq "build.sh --target without a name exit" 2 "$rc"
expect_grep "needs a target name" "$work/err" "build.sh --target"
[[ ! -e $work/never ]] || fail "build.sh --target without a name created its build directory"
echo "PASS: install-deps.sh and build.sh refuse bad arguments"

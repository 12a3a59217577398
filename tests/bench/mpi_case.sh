#!/usr/bin/env bash
# One integration case: runs railbench under a real mpirun with a hard deadline.
#   mpi_case.sh NP expect-ok JSON_CHECK_ARGS -- railbench args...
#   mpi_case.sh NP expect-error REGEX -- railbench args...
#   mpi_case.sh NP expect-error:CODE REGEX -- railbench args...   (and exit code CODE)
# expect-ok: exit 0, and tests/bench/check_results.py validates the --json file; with
# RAILBENCH_CHECK_BATCH=LIST (and RAILBENCH_CHECK_NAME, the case's name) the file is kept
# beside LIST and a line for check_results.py --batch LIST appended instead: the soft-RoCE
# groups check all their cases in one Python start (tests/rxe/cases.sh).
# expect-error: non-zero exit, exactly one "railbench: error:" line matching REGEX,
# and the whole job ends well within the deadline (no hang).
source "$(dirname "$0")/../support/case.sh"

np=$1 mode=$2 arg=$3
shift 3
want_rc=""
if [[ $mode == expect-error:* ]]; then want_rc=${mode#expect-error:}; mode=expect-error; fi
[[ $1 == -- ]] && shift
deadline=${RAILBENCH_TEST_DEADLINE:-240}
case_work

if [[ $mode == expect-ok ]]; then
  json="$work/results.json"
  case_mpirun_ok "$deadline" "$np" "$@" --json "$json"
  if [[ -n ${RAILBENCH_CHECK_BATCH:-} ]]; then
    kept=$(mktemp "$(dirname "$RAILBENCH_CHECK_BATCH")/results.XXXXXX.json")
    cp "$json" "$kept"
    printf '%s\t%q --ranks %q %s\n' "${RAILBENCH_CHECK_NAME:-$*}" "$kept" "$np" "$arg" >>"$RAILBENCH_CHECK_BATCH"
    echo "PASS (exit 0; its results file is checked with the group's: $kept)"
    exit 0
  fi
  # shellcheck disable=SC2086
  python3 "$here/check_results.py" "$json" --ranks "$np" $arg || exit 1
  echo "PASS"
else
  start=$(date +%s)
  rb_mpirun_deadline "$deadline" "$np" "$@" >"$work/out" 2>"$work/err"
  rc=$?
  elapsed=$(($(date +%s) - start))
  cat "$work/out" "$work/err"
  ((rc != 0)) || fail "expected a non-zero exit, got 0"
  ((rc != 124 && rc != 137)) || fail "expected an end well within the deadline, got a hang until the ${deadline}s deadline"
  [[ -z $want_rc ]] || expect_eq "exit code" "$want_rc" "$rc"
  lines=$(grep -c '^railbench: error:' "$work/err")
  expect_eq "the number of 'railbench: error:' lines" 1 "$lines"
  grep '^railbench: error:' "$work/err" | grep -E -- "$arg" >/dev/null ||
    fail "expected the error line to match /$arg/, got: $(grep '^railbench: error:' "$work/err")"
  echo "PASS: exit $rc after ${elapsed}s with one clear line"
fi

#!/usr/bin/env bash
# One --csv case: a real run under mpirun writing --json and --csv, then the CSV read
# back with python's csv module and checked row by row against the JSON.
#   csv_case.sh NP CHECK_RESULTS_ARGS -- railbench args...
# CHECK_RESULTS_ARGS go to tests/bench/check_results.py with --ranks NP (as mpi_case.sh).
source "$(dirname "$0")/../support/case.sh"

np=$1 check_args=$2
shift 2
[[ $1 == -- ]] && shift
deadline=${RAILBENCH_TEST_DEADLINE:-240}
case_work

case_mpirun_ok "$deadline" "$np" "$@" --json "$work/r.json" --csv "$work/r.csv"
# shellcheck disable=SC2086
python3 "$here/check_results.py" "$work/r.json" --ranks "$np" $check_args || exit 1
echo "--- first lines of the CSV"
head -3 "$work/r.csv"
python3 "$here/check_csv.py" "$work/r.json" "$work/r.csv" || exit 1
if ls "$work"/*.tmp.* >/dev/null 2>&1; then fail "expected no temporaries left, got: $(ls "$work")"; fi
echo PASS

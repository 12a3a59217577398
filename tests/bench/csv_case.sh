#!/usr/bin/env bash
# One --csv case: a real run under mpirun writing --json and --csv, then the CSV read
# back with python's csv module and checked row by row against the JSON.
#   csv_case.sh NP CHECK_RESULTS_ARGS -- railbench args...
# CHECK_RESULTS_ARGS go to tests/bench/check_results.py with --ranks NP (as mpi_case.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/lib/mpirun.sh"

np=$1 check_args=$2
shift 2
[[ $1 == -- ]] && shift
deadline=${RAILBENCH_TEST_DEADLINE:-240}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rb_mpirun_deadline "$deadline" "$np" "$@" --json "$work/r.json" --csv "$work/r.csv" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out"
if ((rc != 0)); then
  echo "FAIL: exit code $rc (124 = deadline of ${deadline}s hit)"
  cat "$work/err"
  exit 1
fi
# shellcheck disable=SC2086
python3 "$here/check_results.py" "$work/r.json" --ranks "$np" $check_args || exit 1
echo "--- first lines of the CSV"
head -3 "$work/r.csv"
python3 "$here/check_csv.py" "$work/r.json" "$work/r.csv" || exit 1
if ls "$work"/*.tmp.* >/dev/null 2>&1; then echo "FAIL: temporaries left: $(ls "$work")"; exit 1; fi
echo PASS

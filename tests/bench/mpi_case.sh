#!/usr/bin/env bash
# One integration case: runs railbench under a real mpirun with a hard deadline.
#   mpi_case.sh NP expect-ok JSON_CHECK_ARGS -- railbench args...
#   mpi_case.sh NP expect-error REGEX -- railbench args...
#   mpi_case.sh NP expect-error:CODE REGEX -- railbench args...   (and exit code CODE)
# expect-ok: exit 0, and tests/bench/check_results.py validates the --json file.
# expect-error: non-zero exit, exactly one "railbench: error:" line matching REGEX,
# and the whole job ends well within the deadline (no hang).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/lib/mpirun.sh"

np=$1 mode=$2 arg=$3
shift 3
want_rc=""
if [[ $mode == expect-error:* ]]; then want_rc=${mode#expect-error:}; mode=expect-error; fi
[[ $1 == -- ]] && shift
deadline=${RAILBENCH_TEST_DEADLINE:-240}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ $mode == expect-ok ]]; then
  json="$work/results.json"
  rb_mpirun_deadline "$deadline" "$np" "$@" --json "$json" >"$work/out" 2>"$work/err"
  rc=$?
  cat "$work/out"
  if ((rc != 0)); then
    echo "FAIL: exit code $rc (124 = deadline of ${deadline}s hit)"
    cat "$work/err"
    exit 1
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
  if ((rc == 0)); then echo "FAIL: expected a non-zero exit"; exit 1; fi
  if ((rc == 124 || rc == 137)); then echo "FAIL: hung until the ${deadline}s deadline"; exit 1; fi
  if [[ -n $want_rc ]] && ((rc != want_rc)); then echo "FAIL: exit code $rc, expected $want_rc"; exit 1; fi
  lines=$(grep -c '^railbench: error:' "$work/err")
  if ((lines != 1)); then echo "FAIL: expected exactly one 'railbench: error:' line, got $lines"; exit 1; fi
  if ! grep '^railbench: error:' "$work/err" | grep -E -- "$arg" >/dev/null; then
    echo "FAIL: error line does not match /$arg/"
    exit 1
  fi
  echo "PASS: exit $rc after ${elapsed}s with one clear line"
fi

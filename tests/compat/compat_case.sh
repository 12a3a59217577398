#!/usr/bin/env bash
# JSON compatibility: runs one railbench command under a real mpirun and checks that its
# results file has the shape recorded before the code was reorganized (json_shape.py).
#   compat_case.sh SHAPE NP -- railbench args...
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/lib/mpirun.sh"
shape=$1 np=$2
shift 2
[[ $1 == -- ]] && shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rb_mpirun_deadline 240 "$np" "$@" --json "$work/r.json" >"$work/out" 2>&1
rc=$?
if ((rc != 0)); then
  cat "$work/out"
  echo "FAIL: exit code $rc"
  exit 1
fi
python3 "$here/json_shape.py" "$work/r.json" --expect "$shape"

#!/usr/bin/env bash
# JSON compatibility: runs one railbench command under a real mpirun and checks that its
# results file has the shape recorded before the code was reorganized (json_shape.py).
#   compat_case.sh SHAPE NP -- railbench args...
source "$(dirname "$0")/../support/case.sh"
shape=$1 np=$2
shift 2
[[ $1 == -- ]] && shift
case_work
case_mpirun_ok 240 "$np" "$@" --json "$work/r.json"
python3 "$here/json_shape.py" "$work/r.json" --expect "$shape"

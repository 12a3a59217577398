#!/usr/bin/env bash
# A GPU path on a host without a GPU: mpi_case.sh expect-error with a 10 s deadline.
# Skipped (exit 77) where a CUDA device is visible, since the error does not apply.
#   no_gpu_case.sh NP REGEX -- railbench args...
source "$(dirname "$0")/../support/case.sh"
np=$1 regex=$2
shift 2
[[ $1 == -- ]] && shift
rb=$1
if "$rb" info 2>/dev/null | grep -E '^CUDA devices: [1-9]' >/dev/null; then
  skip "a CUDA device is visible here; the no-GPU error path does not apply"
fi
RAILBENCH_TEST_DEADLINE=10 exec "$here/mpi_case.sh" "$np" expect-error "$regex" -- "$@"

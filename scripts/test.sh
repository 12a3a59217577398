#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs dependencies, builds with
# warnings as errors, runs every ctest test (unit, transport, mpirun integration, bad
# input, soft-RoCE inside a VM, formatting). .ci/run calls exactly this. Extra
# arguments go to ctest, e.g. scripts/test.sh -L rxe or scripts/test.sh -LE rxe.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" -DRAILBENCH_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
cd "${RAILBENCH_BUILD_DIR:-$root/build}"
# Serial: the machine may have 2 cores, and mpirun cases oversubscribe them already.
ctest --output-on-failure --timeout 900 "$@"

#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs dependencies, builds with
# warnings as errors, runs every ctest test (unit, transport, mpirun integration, bad
# input, soft-RoCE inside a VM, formatting), then the sanitizer part
# (scripts/dev/sanitize.sh): ASan+UBSan over the unit and robustness labels and a subset
# of mpi, TSan over the unit tests with threads, each in a build of its own (tests/README.md,
# "Sanitizers": what runs under which and why).
# .ci/run calls exactly this. Extra arguments go to ctest, e.g. scripts/test.sh -L rxe or
# scripts/test.sh -LE rxe; with them the sanitizer part is left out (a chosen subset is a
# local run) unless RAILBENCH_SANITIZERS=1; RAILBENCH_SANITIZERS=0 always leaves it out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" -DRAILBENCH_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
sanitizers=${RAILBENCH_SANITIZERS:-$((($# == 0)))}
rc=0
# Serial: the machine may have 2 cores, and mpirun cases oversubscribe them already.
(cd "${RAILBENCH_BUILD_DIR:-$root/build}" && ctest --output-on-failure --timeout 900 "$@") || rc=1
# After the main suite, and whatever it said: a sanitizer report is a finding of its own.
if [[ $sanitizers != 0 ]]; then
  RAILBENCH_SANITIZE_BUILD_PREFIX=${RAILBENCH_BUILD_DIR:-$root/build} "$root/scripts/dev/sanitize.sh" || rc=1
fi
exit $rc

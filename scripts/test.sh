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
# Each stage's wall time, printed at the end (tests/README.md, "Time").
stages=()
stage_start=$SECONDS
stage_done() {
  stages+=("$1 $((SECONDS - stage_start)) s")
  stage_start=$SECONDS
}
"$root/scripts/install-deps.sh" --for test
stage_done install
# Tests ON: a build directory that quickstart.sh made has them off. A unity build: a
# fresh build in a third of the time (tests/README.md, "Time").
# CMake's own RelWithDebInfo flags (-O2 -g): quickstart.sh's leave -g out.
"$root/scripts/build.sh" -DRAILBENCH_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAILBENCH_BUILD_TESTS=ON \
  -DCMAKE_UNITY_BUILD=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG"
stage_done build
sanitizers=${RAILBENCH_SANITIZERS:-$((($# == 0)))}
rc=0
# Several tests at once where they do not share a verdict's timing, the rest alone
# (scripts/lib/ctest.sh, tests/README.md "How the suite shares the cores").
source "$root/scripts/lib/ctest.sh"
rb_ctest "${RAILBENCH_BUILD_DIR:-$root/build}" "$@" || rc=1
stage_done suite
# After the main suite, and whatever it said: a sanitizer report is a finding of its own.
if [[ $sanitizers != 0 ]]; then
  RAILBENCH_SANITIZE_BUILD_PREFIX=${RAILBENCH_BUILD_DIR:-$root/build} "$root/scripts/dev/sanitize.sh" || rc=1
  stage_done sanitizers
fi
echo "test.sh: $(IFS=,; echo "${stages[*]}" | sed 's/,/, /g'); $SECONDS s in all; exit $rc"
exit $rc

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
# How the run shares the cores, and where its minutes go: tests/README.md, "Time".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RAILBENCH_BUILD_DIR:-$root/build}
# Each stage's wall time, printed at the end (tests/README.md, "Time").
stages=()
stage_start=$SECONDS
stage_done() {
  stages+=("$1 $((SECONDS - stage_start)) s")
  stage_start=$SECONDS
}
"$root/scripts/install-deps.sh" --for test
stage_done install
# Tests ON: a build directory that quickstart.sh made has them off. A unity build, tests
# included: a fresh build in a third of the time. -O2 without -g: debug information was
# 40% of the compile time and nothing in the suite reads it (the sanitizer builds keep
# file and line in their reports). The test binaries' own sources at -O1: two thirds of
# -O2's compile time, and the code they test is the libraries', at -O2.
"$root/scripts/build.sh" -DRAILBENCH_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAILBENCH_BUILD_TESTS=ON \
  -DCMAKE_UNITY_BUILD=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
  -DRAILBENCH_TEST_CXX_FLAGS=-O1
stage_done build
sanitizers=${RAILBENCH_SANITIZERS:-$((($# == 0)))}
rc=0
source "$root/scripts/lib/ctest.sh"

# The sanitizer builds, meanwhile, under SCHED_IDLE: the kernel gives them a core only
# when no test wants it, and takes it back the moment one does (the tests' verdicts see
# no competitor); then, still idle, the sanitizer runs that have no peer process and no
# wall-clock verdict (sanitize.sh --early). Their output goes to a log, shown if they fail.
san_pid="" san_log=$build/sanitize-early.log
stop_san_build() { [[ -z $san_pid ]] || kill -- -"$san_pid" 2>/dev/null || true; }
trap stop_san_build EXIT
if [[ $sanitizers != 0 ]]; then
  # Where the policy is refused (a sandbox's seccomp filter), the lowest nice level.
  idle=(chrt --idle 0)
  "${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
  RAILBENCH_SANITIZE_BUILD_PREFIX=$build setsid "${idle[@]}" \
    "$root/scripts/dev/sanitize.sh" --early >"$san_log" 2>&1 </dev/null &
  san_pid=$!
fi

# Several tests at once where they do not share a verdict's timing, packed first; then
# the tests labelled `alone` (a time, a rate or a deadline is their verdict), one at a
# time; last those labelled `quiet` too, whose verdict even an idle-priority neighbour
# moves (a TCG guest's timing, the fabric phase's noise floor): they start once the
# sanitizer work beside the suite has ended (scripts/lib/ctest.sh, tests/README.md
# "How the suite shares the cores").
wait_sanitizers() {
  [[ -n $san_pid ]] || return 0
  san_rc=0
  wait "$san_pid" || san_rc=$?
  san_pid=""
  stage_done "sanitizer builds and early runs (what was left of them after the suite)"
}
san_rc=0
if (($#)); then
  rb_ctest "$build" "$@" || rc=1
  stage_done suite
else
  rb_ctest "$build" -LE '^alone$' || rc=1
  stage_done "suite (tests that share the cores)"
  rb_ctest "$build" -L '^alone$' -LE '^quiet$' || rc=1
  stage_done "suite (tests alone)"
  wait_sanitizers
  rb_ctest "$build" -L '^quiet$' || rc=1
  stage_done "suite (quiet tests, nothing beside them)"
fi

# After the main suite, and whatever it said: a sanitizer report is a finding of its own.
# The early part's verdict stands unless a test of it failed with no sanitizer report (a
# deadline missed while the suite held the cores): then it runs again, at normal priority.
if [[ $sanitizers != 0 ]]; then
  wait_sanitizers
  san=("$root/scripts/dev/sanitize.sh")
  case $san_rc in
    0) san+=(--late) ;;
    1)
      grep -E '^sanitize\.sh|Failed|\*\*\*' "$san_log" | tail -n 20
      echo "test.sh: a sanitizer run beside the suite failed with no sanitizer report (above; all of it in $san_log): all of them again, alone"
      ;;
    *)
      tail -n 60 "$san_log"
      echo "test.sh: the sanitizer part beside the suite failed with exit $san_rc (3: a build, 4: a sanitizer report; above, all of it in $san_log)"
      rc=1 san=()
      ;;
  esac
  if ((${#san[@]})); then
    RAILBENCH_SANITIZE_BUILD_PREFIX=$build "${san[@]}" || rc=1
    stage_done "sanitizers (${san[1]:-all again})"
  fi
fi
echo "test.sh: $(IFS=,; echo "${stages[*]}" | sed 's/,/, /g'); $SECONDS s in all; exit $rc"
exit $rc

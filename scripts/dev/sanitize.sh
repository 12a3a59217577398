#!/usr/bin/env bash
# The sanitizer part of the test suite (scripts/test.sh runs it after the main suite):
# builds railbench and its tests twice more, with ASan+UBSan and with TSan, and runs the
# labels where each finds what the plain build cannot (tests/README.md, "Sanitizers").
#   scripts/dev/sanitize.sh [--build-only|--early|--late] [address|thread]...   (default: both)
# --build-only: build the variants' directories and stop.
# --early: build, then only the runs with no peer process and no wall-clock verdict (ASan's
#   unit label, TSan's unit binary); --late: the rest (ASan's fault and mpirun cases).
#   scripts/test.sh runs --early in the background, under SCHED_IDLE, while the main
#   suite runs, and --late after it (tests/README.md, "Time").
# Exit: 0 clean, 1 a test failed, 2 bad arguments, 3 a build failed, 4 a sanitizer
#   report (a finding whatever the test said).
# address: build-asan/ (-DRAILBENCH_SANITIZE=address,undefined): the unit label, 7 mpi
#   cases and the stopped-rank fault case, leaks checked in all (Open MPI's own named in
#   tests/sanitizers/lsan.supp); RAILBENCH_SANITIZE_FULL=1 adds the robustness label and
#   7 more mpi cases; netns and transport cases left out (the flapping one is measured on
#   its own).
# thread: build-tsan/ (-DRAILBENCH_SANITIZE=thread): railbench_unit_tests, whole,
#   where the progress engine, the liveness thread and ranks as threads meet over the
#   loopback transport; not mpirun's runs: Open MPI and libfabric are not instrumented,
#   so TSan would report their internals there.
# Each builds only the executables its labels run, in unity batches, with -g1 (the
# stacks keep file and line): ASan+UBSan at -O0 (half of -O1's build time, the cases a
# fifth slower; both find the same errors), TSan at -O1 (unoptimized, the threaded
# cases would crawl; its one binary builds in a minute and a half).
# RAILBENCH_SANITIZE_BUILD_PREFIX (default: <repo>/build) names the build directories
# (<prefix>-asan, <prefix>-tsan).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
prefix=${RAILBENCH_SANITIZE_BUILD_PREFIX:-$root/build}
jobs=$(nproc)
((jobs > 2)) || jobs=2
source "$root/scripts/lib/ctest.sh"

# What each variant runs. ASan's mpi subset: the ring collective over tcp and the
# pairwise exchange over shm, sendrecv's write with immediate, kvcache's transfer and
# serving loop, workload, and one bad input, each once with -c: every layer (collectives,
# runner, results, refusals) over both libfabric providers. The whole mpi label (172 runs)
# would take longer under ASan than the rest of the suite together. RAILBENCH_SANITIZE_FULL=1
# adds the robustness label (runs that end badly, about 4 minutes more under ASan) and
# seven more mpi cases: what a change to those paths should be run with by hand.
asan_targets=(railbench fi_reference railbench_unit_tests railbench_bench_unit_tests railbench_compare_unit_tests
  railbench_csv_unit_tests railbench_hostlist_tool railbench_kvcache_unit_tests railbench_report_unit_tests
  railbench_validate_unit_tests railbench_with_fake railbench_rendezvous_sim railbench_db_unit_tests)
asan_mpi=(
  "allreduce -np 4 ofi:tcp -c" "alltoall -np 3 ofi:shm --window 1 -c"
  "sendrecv --verb write --write-latency imm -np 2 ofi:shm -c"
  "kvcache --mode per-block -np 4 ofi:tcp -c" "kvcache --serve -np 4 ofi:tcp coalesced -c"
  "workload pp2 dp2 zero1 -np 4 ofi:tcp -c" "bad input: unknown provider")
asan_mpi_full=(
  "allreduce --algo rhd -np 5 ofi:shm every op -c" "allreduce --algo hier -np 4 ofi:tcp -c"
  "allgather -np 3 ofi:shm -c" "reducescatter -np 3 ofi:shm -c" "sendrecv --verb read -np 2 ofi:tcp -c"
  "bad input: kvcache concurrency beyond memory" "bad input: validate config with an unknown field")
full=${RAILBENCH_SANITIZE_FULL:-0}
# The stopped rank (tests/bench/fault_case.sh stop): rank 2 SIGSTOPped mid-allreduce,
# the survivors' liveness probes name it, and they end with their error while it is
# stopped: the teardown after a fault, leaks included. About 20 s under ASan.
asan_fault="robustness: allreduce -np 4 with rank 2 stopped names rank 2"
asan_skip='endings by'
# TSan: the unit binary with the threads in it (ranks as threads over the loopback
# transport, Progress, the liveness probe, the timeline sampler, the rendezvous); the
# other unit binaries are mostly single-threaded logic, checked by ASan.
tsan_targets=(railbench_unit_tests)

configure_and_build() {  # configure_and_build DIR SANITIZERS OPT TARGETS...
  local dir=$1 sanitizers=$2 opt=$3
  shift 3
  local -a generator=()
  command -v ninja >/dev/null && [[ ! -f $dir/CMakeCache.txt ]] && generator=(-G Ninja)
  # No -Werror here: the plain build enforces warnings; GCC's warnings under the
  # sanitizers' instrumentation (stringop, maybe-uninitialized) are not about our code.
  # No CUDA, NCCL, UCX, verbs or soft-RoCE: their tests need a device, a VM or
  # transports the chosen labels do not run (ofi's tcp and shm carry the mpi subset).
  # Unity batches as the main build's: each library's sources compiled a few at a time.
  cmake -S "$root" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$opt -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$opt -g1" \
    -DRAILBENCH_SANITIZE="$sanitizers" -DRAILBENCH_WITH_CUDA=OFF -DRAILBENCH_WITH_NCCL=OFF \
    -DRAILBENCH_WITH_UCX=OFF -DRAILBENCH_WITH_VERBS=OFF \
    -DRAILBENCH_RXE_TESTS=OFF >/dev/null || exit 3
  local start=$SECONDS
  cmake --build "$dir" --parallel "$jobs" --target "$@" || exit 3
  echo "sanitize.sh: built $dir in $((SECONDS - start)) s"
}

# Every sanitizer report is a file in <build>/sanitizer-reports (tests/sanitizers/defaults.cc):
# emptied before the tests, printed and failing after, whatever the tests' own verdicts.
clear_reports() { rm -f "$1"/sanitizer-reports/*; }
check_reports() {  # check_reports DIR
  local f n=0
  for f in "$1"/sanitizer-reports/*; do
    [[ -e $f ]] || continue
    n=$((n + 1))
    echo "== sanitizer report $f:"
    head -n 80 "$f"
  done
  ((n == 0)) || echo "sanitize.sh: $n sanitizer report(s) in $1/sanitizer-reports (above)"
  ((n == 0))
}

# Each variant's runs as two parts: early (no peer process, no wall-clock verdict) and
# late; a part that is not asked for is left out. A sanitizer report is exit 4 (below).
run_address() {
  local dir=$prefix-asan rc=0 names
  configure_and_build "$dir" address,undefined -O0 "${asan_targets[@]}"
  ((build_only == 0)) || return 0
  clear_reports "$dir"
  if ((early)); then rb_ctest "$dir" -L '^unit$' || rc=1; fi
  if ((late)); then
    # Under mpirun the leak suppressions name MPI_Init's frame, below Open MPI's and PMIx's
    # own, which have no frame pointers: only the full unwinder reaches it
    # (tests/sanitizers/lsan.supp). It costs the 7 cases a few seconds in 50.
    local -a cases=("${asan_mpi[@]}")
    [[ $full == 1 ]] && cases+=("${asan_mpi_full[@]}")
    names=$(printf '|^mpirun: %s$' "${cases[@]}")
    if [[ $full == 1 ]]; then
      ASAN_OPTIONS=detect_leaks=0 rb_ctest "$dir" -L '^robustness$' \
        -LE '^(unit|netns|slurm|install|gpu|transport)$' -E "$asan_skip" || rc=1
    else
      ASAN_OPTIONS=fast_unwind_on_malloc=0 rb_ctest "$dir" -R "^$asan_fault\$" || rc=1
    fi
    ASAN_OPTIONS=fast_unwind_on_malloc=0 rb_ctest "$dir" -R "${names:1}" || rc=1
  fi
  check_reports "$dir" || return 4
  return $rc
}

run_thread() {
  local dir=$prefix-tsan t rc=0
  ((early || build_only)) || return 0  # --late: TSan has nothing late to run
  configure_and_build "$dir" thread -O1 "${tsan_targets[@]}"
  ((build_only == 0)) || return 0
  clear_reports "$dir"
  # Each binary whole, in one process (its ctest cases are the same ones, one process each).
  for t in "${tsan_targets[@]}"; do
    echo "== TSan: $t"
    (cd "$dir/tests" && "./$t") || rc=1
  done
  check_reports "$dir" || return 4
  return $rc
}

build_only=0 early=1 late=1
case ${1-} in
  --build-only) build_only=1; shift ;;
  --early) late=0; shift ;;
  --late) early=0; shift ;;
esac
variants=("$@")
((${#variants[@]})) || variants=(address thread)
for v in "${variants[@]}"; do
  [[ $v == address || $v == thread ]] && continue
  echo "sanitize.sh: unknown variant '$v': give [--build-only|--early|--late] and address, thread or nothing (both)" >&2
  exit 2
done
rc=0
for v in "${variants[@]}"; do
  start=$SECONDS
  v_rc=0
  "run_$v" || v_rc=$?
  ((v_rc <= rc)) || rc=$v_rc  # the worst: a report (4) over a failed test (1)
  echo "sanitize.sh: $v: $((SECONDS - start)) s, build included"
done
exit $rc

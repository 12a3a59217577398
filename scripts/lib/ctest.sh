# rb_ctest BUILD_DIR [ctest arguments...]: ctest over the build's tests with the cores
# shared as tests/cmake/railbench_tests.cmake schedules them (unit cases and refusals
# several at once, ranks that move data two at a time, timing verdicts alone), then every
# test that failed once more, alone: one that passes alone is named in a line of its own
# (a test that failed only beside another one), one that fails again fails the run.
# RAILBENCH_CTEST_JOBS=1 runs everything one at a time, as before.
# Sourced by scripts/test.sh and scripts/dev/sanitize.sh.
rb_ctest() {
  local build spec jobs rc=0
  build=$(cd "$1" && pwd)  # ctest reads the spec after changing into the build
  shift
  jobs=${RAILBENCH_CTEST_JOBS:-$((2 * $(nproc)))}
  spec=$build/ctest-resources.json
  "$(dirname "${BASH_SOURCE[0]}")/../../tests/cmake/resources.sh" >"$spec"
  # Each run's per-test times stay in the build (scripts/dev/ctest-times.py reads them).
  mkdir -p "$build/Testing/junit"
  ctest --test-dir "$build" --output-on-failure --timeout 900 -j "$jobs" --resource-spec-file "$spec" \
    --output-junit "$build/Testing/junit/$(date +%s%N).xml" "$@" || rc=$?
  ((rc != 0)) || return 0
  local failed=$build/Testing/Temporary/LastTestsFailed.log
  [[ -s $failed ]] || return $rc  # ctest itself failed (bad arguments, no tests): no rerun
  local names
  names=$(cut -d: -f2- "$failed" | paste -sd, -)
  echo "rb_ctest: $(wc -l <"$failed") test(s) failed beside others; each once more, alone: $names"
  if ctest --test-dir "$build" --output-on-failure --timeout 900 -j 1 --rerun-failed \
    --output-junit "$build/Testing/junit/$(date +%s%N).xml"; then
    echo "rb_ctest: passed when run alone (failed only beside other tests): $names"
    return 0
  fi
  return 1
}

#!/usr/bin/env bash
# Writes ctest's resource spec for this host to stdout: `cores`, with 2 slots per core
# (tests/cmake/railbench_tests.cmake, railbench_schedule: a unit case takes 1 slot, ranks
# that move data 2, timing verdicts run alone), and `vm`, one slot: one soft-RoCE VM at
# a time (tests/rxe/CMakeLists.txt: two TCG guests on 2 cores slow each other 2-3x).
#   ctest -j "$(nproc)" --resource-spec-file <(tests/cmake/resources.sh)
set -euo pipefail
slots=$((2 * $(nproc)))
printf '{"version": {"major": 1, "minor": 0}, "local": [{"cores": [{"id": "0", "slots": %d}], "vm": [{"id": "0", "slots": 1}]}]}\n' "$slots"

#!/usr/bin/env bash
# From a fresh Debian machine: installs what building and running railbench needs (not
# what only the tests use), builds the railbench binary alone, and runs the main job on a
# local default: two ranks on this host over libfabric (shm), point-to-point and
# all-reduce, printing the tables.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
start=$SECONDS
"$root/scripts/install-deps.sh" --for build
# Tests off: Catch2 is a test dependency and the test binaries are a third of the build.
# A build directory that scripts/test.sh configured keeps its tests (ON is not forced off).
# A unity build (each library's sources compiled a batch at a time) without debug
# information: the same -O2 code as scripts/test.sh's build, in about half the time
# (tests/README.md, "Time").
fresh=()
[[ -f ${RAILBENCH_BUILD_DIR:-$root/build}/CMakeCache.txt ]] ||
  fresh=(-DRAILBENCH_BUILD_TESTS=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG")
"$root/scripts/build.sh" --target railbench "${fresh[@]}" -DCMAKE_UNITY_BUILD=ON
echo "quickstart: built railbench alone, in $((SECONDS - start)) s; left out: the test suite and" \
  "the tools only it uses (QEMU, Slurm, Chromium, ...): scripts/test.sh installs and runs them"
source "$root/scripts/lib/mpirun.sh"
bin="${RAILBENCH_BUILD_DIR:-$root/build}/railbench"
out="${RAILBENCH_BUILD_DIR:-$root/build}"

echo
"$bin" info
echo
rb_mpirun 2 "$bin" sendrecv -t ofi -b 8 -e 4M -f 4 -n 1000 --json "$out/quickstart-sendrecv.json"
echo
rb_mpirun 2 "$bin" allreduce -t ofi -b 1K -e 64M -f 4 -c --json "$out/quickstart-allreduce.json"
echo
echo "quickstart: tables printed after $((SECONDS - start)) s; results in $out/quickstart-*.json"

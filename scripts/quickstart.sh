#!/usr/bin/env bash
# From a fresh Debian machine: installs dependencies, builds, and runs the main job on
# a local default: two ranks on this host over libfabric (shm), point-to-point and
# all-reduce, printing the tables.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
source "$root/scripts/lib/mpirun.sh"
bin="${RAILBENCH_BUILD_DIR:-$root/build}/railbench"

echo
"$bin" info
echo
rb_mpirun 2 "$bin" sendrecv -t ofi -b 8 -e 4M -f 4 -n 1000 --json "$root/build/quickstart-sendrecv.json"
echo
rb_mpirun 2 "$bin" allreduce -t ofi -b 1K -e 64M -f 4 -c --json "$root/build/quickstart-allreduce.json"

#!/usr/bin/env bash
# Configures and builds railbench into build/ (or $RAILBENCH_BUILD_DIR).
#   scripts/build.sh [--target NAME]... [cmake arguments...]
# --target builds only those targets (quickstart.sh builds only `railbench`); without it,
# everything. Other arguments go to cmake, e.g. scripts/build.sh -DRAILBENCH_WERROR=ON
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RAILBENCH_BUILD_DIR:-$root/build}
targets=()
while (($#)) && [[ $1 == --target ]]; do
  (($# >= 2)) || { echo "build.sh: --target needs a target name" >&2; exit 2; }
  targets+=(--target "$2")
  shift 2
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ -f $build/CMakeCache.txt ]]; then generator=(); fi  # keep the generator it was made with
cmake -S "$root" -B "$build" "${generator[@]}" "$@"
cmake --build "$build" --parallel "$(nproc)" "${targets[@]}"

#!/usr/bin/env bash
# Configures and builds railbench into build/ (or $RAILBENCH_BUILD_DIR).
# Extra arguments go to cmake, e.g. scripts/build.sh -DRAILBENCH_WERROR=ON
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${RAILBENCH_BUILD_DIR:-$root/build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ -f $build/CMakeCache.txt ]]; then generator=(); fi  # keep the generator it was made with
cmake -S "$root" -B "$build" "${generator[@]}" "$@"
cmake --build "$build" --parallel "$(nproc)"

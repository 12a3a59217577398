#!/usr/bin/env bash
# Fails, listing the files, when any C++ source differs from its clang-format output.
set -uo pipefail
clang_format=${1:-clang-format}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mapfile -t files < <(git ls-files '*.h' '*.cc' 2>/dev/null || find bench lib transports collectives tests -name '*.h' -o -name '*.cc')
bad=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "not clang-formatted (run: clang-format -i ${bad[*]}):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "${#files[@]} files clang-formatted"

#!/usr/bin/env bash
# Fails, naming the lines, where a shell script pipes into a reader that quits at its
# first match (grep -q, or awk/sed that exit early): the writer then dies of SIGPIPE and,
# under `set -o pipefail`, the pipeline fails though the match was found, or a negated
# check passes though it should not. It happens only when the writer is still writing,
# so it fails one run in many (CI failed `launch: torchrun-agent` this way). Write
# `grep PATTERN >/dev/null`, which reads all its input, instead.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mapfile -t files < <(git ls-files '*.sh' '*.sbatch' 'scripts/*' '.ci/*' 2>/dev/null | sort -u)
bad=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  head -c 200 "$f" | grep -E '^#!.*(ba)?sh|\.sh$' >/dev/null || [[ $f == *.sh || $f == *.sbatch ]] || continue
  while IFS= read -r hit; do
    bad+=("$f:$hit")
  done < <(grep -nE '\|[[:space:]]*grep[[:space:]]+-[[:alpha:]]*q' "$f" | grep -vE '^[0-9]+:[[:space:]]*#')
done
if ((${#bad[@]})); then
  echo "a pipe into 'grep -q' can fail by SIGPIPE under pipefail; use 'grep PATTERN >/dev/null':"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "${#files[@]} shell files: no pipe into grep -q"

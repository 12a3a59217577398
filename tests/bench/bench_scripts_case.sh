#!/usr/bin/env bash
# The soft-RoCE benchmark scripts refuse bad input with exit 2 and a line naming the
# value, before they build anything or boot a VM (nothing here needs the VM).
source "$(dirname "$0")/../support/case.sh"
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
fails=0
expect_refused() { # EXPECTED_TEXT ENV... -- COMMAND...
  local text=$1 rc=0 out
  shift
  local -a env=()
  while [[ $1 != -- ]]; do
    env+=("$1")
    shift
  done
  shift
  out=$(timeout 20 env "${env[@]}" "$@" 2>&1) || rc=$?
  if ((rc != 2)) || [[ $out != *"$text"* ]]; then
    echo "FAIL: $* (${env[*]}): exit $rc, expected 2 with '$text'; got: $out" >&2
    fails=$((fails + 1))
  else
    echo "ok: $(basename "$1") ${*:2} ${env[*]} -> $out"
  fi
}
expect_refused "VM_CLOCK must be tsc or unset, got 'hpet'" VM_CLOCK=hpet -- \
  "$root/scripts/bench/compare-perftest.sh" 1
expect_refused "REPS must be a whole number >= 1, got '0'" -- "$root/scripts/bench/compare-perftest.sh" 0
expect_refused "VERB must be send, write or read, got 'atomic'" -- \
  "$root/scripts/bench/profile-rxe-lat.sh" atomic
expect_refused "ITERS must be a whole number >= 1, got '-5'" -- "$root/scripts/bench/profile-rxe-lat.sh" write -5
((fails == 0))

#!/usr/bin/env bash
# The same tp 2 x dp 2 step as railbench's own trace, a Chakra ET, PARAM comms JSON and
# a PyTorch ET (tests/workload/fixtures/outside, written by `railbench workload
# --emit-trace-format`), each replayed under mpirun over ofi:shm with -c: every run
# passes its data check and moves the same bytes per step in each group kind.
#   formats_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_work
fixtures="$here/fixtures"
runs=(
  "railbench $fixtures/tiny-dense-tp2-dp2.trace.json"
  "chakra $fixtures/outside/tp2-dp2.chakra.{rank}.et"
  "param $fixtures/outside/tp2-dp2.param.{rank}.json"
  "pytorch $fixtures/outside/tp2-dp2.pytorch.{rank}.json"
)
for run in "${runs[@]}"; do
  read -r name trace <<<"$run"
  case_mpirun_ok 120 4 "$rb" workload -t ofi:shm --trace "$trace" -n 2 -w 1 -c --no-stragglers -q \
    --json "$work/$name.json"
  python3 - "$work/$name.json" >"$work/$name.bytes" <<'PY' || fail "$name: no per-kind bytes in its results"
import json, sys
kinds = json.load(open(sys.argv[1]))["summary"]["kinds"]
for k in sorted(kinds):
    print(k, int(kinds[k]["bytes_per_step"]))
PY
  echo "$name: $(tr '\n' ' ' <"$work/$name.bytes")"
done
for name in chakra param pytorch; do
  cmp -s "$work/railbench.bytes" "$work/$name.bytes" ||
    fail "$name moved other bytes per kind than railbench's own trace: $(cat "$work/$name.bytes") vs $(cat "$work/railbench.bytes")"
done
grep -q "^tp " "$work/railbench.bytes" && grep -q "^dp " "$work/railbench.bytes" ||
  fail "expected tp and dp traffic in the step, got: $(cat "$work/railbench.bytes")"
echo "PASS: four formats, the same bytes per kind"

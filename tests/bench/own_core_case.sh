#!/usr/bin/env bash
# Whether a rank has a CPU of its own (and so spins while it waits for a peer, instead of
# yielding) follows the CPUs its machine's ranks may run on, not the machine's count:
# 2 ranks under `taskset -c 0` share one CPU, whatever the host has; 2 ranks free to run
# on 2 or more CPUs have one each. The results file says which (world.ranks[].cpus and
# .own_core).
#   own_core_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_work
command -v taskset >/dev/null || skip "no taskset (apt-get install util-linux)"
args=(sendrecv -t ofi:shm -b 8 -e 8 -n 200 -w 10)

# check FILE OWN_CORE [CPUS]: every rank's own_core (and its cpus) as given.
check() {
  python3 - "$@" <<'PY'
import json, sys
path, want, cpus = sys.argv[1], sys.argv[2] == "true", sys.argv[3] if len(sys.argv) > 3 else ""
ranks = json.load(open(path))["world"]["ranks"]
for r in ranks:
    assert r["own_core"] == want, f"rank {r['rank']}: own_core {r['own_core']}, expected {want} (cpus {r['cpus']})"
    assert not cpus or r["cpus"] == cpus, f"rank {r['rank']}: cpus '{r['cpus']}', expected '{cpus}'"
print(f"{len(ranks)} ranks: own_core {want}, cpus {ranks[0]['cpus']}")
PY
}

# Pinned to CPU 0 (mpirun binds nothing itself here: --bind-to none), so the ranks inherit it.
taskset -c 0 bash -c "$(declare -f rb_mpirun rb_mpirun_deadline); rb_mpirun_deadline 60 2 $(printf '%q ' "$rb" \
  "${args[@]}" --json "$work/pinned.json")" >"$work/pinned.out" 2>&1
rc=$?
cat "$work/pinned.out"
((rc == 0)) || fail "2 ranks under taskset -c 0: exit $rc"
check "$work/pinned.json" false 0 || fail "2 ranks pinned to CPU 0 were said to have a CPU each"

if (($(nproc) >= 2)); then
  case_mpirun_ok 60 2 "$rb" "${args[@]}" --json "$work/free.json"
  check "$work/free.json" true || fail "2 ranks free to run on $(nproc) CPUs were said to share one"
fi
echo "PASS"

#!/usr/bin/env bash
# Tenants on the simulated SU (up.sh --tenants: a leaf bridge per rail and tenant, a
# spine per tenant) and `railbench validate` with a tenants config: real namespaces,
# real ranks under a real mpirun.
#   isolated: tenants a (node01-02) and b (node03-04) pass: every cross-tenant probe
#             times out, each tenant's all-reduce runs alone and under the other's load
#   breached: node02's rail1 port in tenant b's network (fault.sh breach): the probes
#             that get through are named, the port is singled out and node02 drained
# Also the bad input of --tenants and of fault.sh breach (exit 2, nothing built).
#   tenants_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
config="$here/../../configs/netns-4x2-tenants.json"
case_su_up rbtten

refused() {  # refused "words" up.sh-arguments...: exit 2 naming the problem, nothing built
  local words=$1 out rc
  shift
  out=$("$su/up.sh" "$@" 2>&1)
  rc=$?
  ((rc == 2)) && [[ $out == *"$words"* ]] || fail "up.sh $*: exit $rc, '$out' (expected exit 2 and '$words')"
  [[ ! -f $RB_SU_STATE/su.env ]] || fail "a refused up.sh $* left state behind"
}
refused "names one tenant" --nodes 4 --tenants a=1-4
refused "node 3 is in tenant 'a' and in 'b'" --nodes 4 --tenants a=1-3,b=3-4
refused "b=3-5 is not a range inside node 1..4" --nodes 4 --tenants a=1-2,b=3-5
refused "node 4 is in no tenant" --nodes 4 --tenants a=1-1,b=2-3
refused "is not NAME=FIRST-LAST" --nodes 4 --tenants "A=1-2,b=3-4"

"$su/up.sh" --nodes 4 --rails 2 --rate 400 --tenants a=1-2,b=3-4 || fail "up.sh --tenants failed"
ip netns list | grep "^$RB_SU_PREFIX-spine-t1 " >/dev/null || fail "no spine for tenant b"
! ip netns list | grep "^$RB_SU_PREFIX-spine " >/dev/null || fail "a tenant SU has the shared spine"

run_validate() {  # run_validate NAME: JSON to $work/NAME.json, exit code in $rc
  timeout --kill-after=10 240 "$su/mpirun.sh" -- "$rb" validate --config "$config" --json "$work/$1.json" \
    --drain-list "$work/$1.drain" >"$work/out" 2>"$work/err"
  rc=$?
  grep -v '^--\|^ *$\|^validate:' "$work/out"
  ((rc == 124 || rc == 137)) && fail "validate hung until the deadline"
  [[ -s $work/$1.json ]] || fail "no results file"
}

echo "== isolated"
run_validate isolated
((rc == 0)) || fail "the isolated tenant SU failed (exit $rc)"
python3 - "$work/isolated.json" <<'PY' || fail "the isolated run's JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "PASS", d["verdict"]
probes = d["isolation"]
# 2 x 2 cross-tenant node pairs, each on 2 rails and 2 cross-rail paths
assert len(probes) == 16, len(probes)
assert all(p["isolated"] and p["tenant_a"] != p["tenant_b"] for p in probes), probes
# only same-tenant pairs were tested on the rails
for rail in d["rail_pairs"]:  # node indexes: node01 is 0
    assert {rail["node_a"], rail["node_b"]} in ({0, 1}, {2, 3}), rail
loaded = [t for t in d["tenant_collectives"] if t.get("loaded")]
assert sorted(t["tenant"] for t in loaded) == ["a", "b"], d["tenant_collectives"]
for t in loaded:
    assert t["ratio"] > 0 and t["busbw_gbs"] > 0 and t["aggressors_outlasted"], t
    print(f"tenant {t['tenant']}: all-reduce busbw {t['busbw_gbs']:.4f} GB/s loaded = {t['ratio']:.2f}x alone")
PY

echo "== breached: node02 rail1 in tenant b's network"
out=$("$su/fault.sh" breach node02 rail1 c 2>&1)
(($? == 2)) && [[ $out == *"no tenant 'c' in this SU (tenants: a,b)"* ]] || fail "breach into an unknown tenant: '$out'"
out=$("$su/fault.sh" breach node02 rail1 a 2>&1)
(($? == 2)) && [[ $out == *"in tenant 'a' already"* ]] || fail "breach into its own tenant: '$out'"
"$su/fault.sh" breach node02 rail1 b || fail "fault.sh breach failed"
run_validate breached
((rc == 1)) || fail "the breached SU did not FAIL (exit $rc)"
python3 - "$work/breached.json" <<'PY' || fail "the breached run's findings"
import json, sys
d = json.load(open(sys.argv[1]))
iso = [f for f in d["findings"] if f["kind"] == "isolation"]
subjects = sorted(f["subject"] for f in iso)
# node02's rail1 reached both of tenant b's nodes, on rail1 and through b's spine
for want in ("node02 -> node03 rail1", "node02 -> node04 rail1", "node02 -> node03 rail1 -> rail0"):
    assert want in subjects, (want, subjects)
assert all("node02" in s for s in subjects), subjects
port = [f for f in iso if f["subject"].startswith("node02 rail1")]
assert len(port) == 1 and "tenant b" in port[0]["reason"], iso
assert d["bad_nodes"]["hosts"] == ["node02"], d["bad_nodes"]
PY
[[ $(cat "$work/breached.drain") == node02 ]] || fail "drain list '$(cat "$work/breached.drain")', expected node02"
"$su/fault.sh" clear node02 rail1 >/dev/null || fail "clear failed"
[[ $("$su/fault.sh" list) == "no faults"* ]] || fail "the breach is still listed after clear"
echo "PASS: tenants isolated on the netns SU; a port in the other tenant's network named and its node drained"

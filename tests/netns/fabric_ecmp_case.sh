#!/usr/bin/env bash
# validate's ECMP sweep (--ecmp-sweep) on the simulated multi-spine fabric (2 SUs x 4
# nodes x 2 rails x 4 spines at 100 Mb/s) with one leaf that hashes the addresses only
# (fault.sh hash-l3 su2-leaf1): a cross-SU all-to-all with 1 and then 4 flows per
# connection, every flow traced. Checks the results' sweep (each step's flows, connections,
# traced paths and flows per uplink add up; the ideal is 16 NICs at 100 Mb/s; what the
# paths allow is a share of it) and that su2-leaf1, and no other leaf, is named for
# ignoring the ports; bad --ecmp-sweep input is refused in one line.
#   fabric_ecmp_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_su_up rbecmp
command -v nft >/dev/null || skip "no nft (apt-get install nftables): the simulated fabric's faults need it"
[[ -e /proc/sys/net/ipv4/fib_multipath_hash_seed ]] || skip "this kernel has no per-namespace ECMP hash seed"
export RB_SU_NET=10.150  # the config's fabric section names the fabric's addresses under it
config=$rb_root/configs/netns-2su-4x2-4spine.json

out=$("$rb" validate --config "$config" --plan --ecmp-sweep 1,0 2>&1)
rc=$?
((rc == 2)) && [[ $out == *"--ecmp-sweep '1,0': '0' is not a flow count in 1..64"* ]] ||
  fail "--ecmp-sweep 1,0: exit $rc, '$out'"
"$rb" validate --config "$config" --plan --ecmp-sweep 1,4 >"$work/plan.out" 2>&1 || fail "validate --plan failed"
expect_grep 'ECMP sweep: a cross-SU all-to-all with 1,4 flows per connection, each NIC to 4 NICs of its rail in other SUs: 320 flows traced' \
  "$work/plan.out" "the plan's sweep line"

"$su/up.sh" --sus 2 --nodes 4 --rails 2 --spines 4 --rate 100 >"$work/up.log" 2>&1 || fail "up.sh failed: $(cat "$work/up.log")"
"$su/fault.sh" hash-l3 su2-leaf1 >/dev/null || fail "fault.sh hash-l3 su2-leaf1 failed"
timeout --kill-after=10 300 "$su/mpirun.sh" -- "$rb" validate --config "$config" --fabric-only --ecmp-sweep 1,4 \
  --json "$work/sweep.json" >"$work/sweep.log" 2>&1
status=$?
sed -n '/ECMP sweep/,/^# *$/p' "$work/sweep.log"
((status <= 1)) || fail "validate --fabric-only --ecmp-sweep 1,4 failed (exit $status): $(tail -n 5 "$work/sweep.log")"
python3 - "$work/sweep.json" <<'PY' || fail "the sweep's results (above)"
import json, sys
d = json.load(open(sys.argv[1]))
sweep = d["fabric"]["ecmp_sweep"]
steps = sweep["steps"]
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL:", what)
        ok = False
check([s["flows_per_connection"] for s in steps] == [1, 4], "steps 1 and 4")
check(sweep["peers"] == 4, "each NIC to the 4 NICs of its rail in the other SU")
for s in steps:
    k = s["flows_per_connection"]
    check(s["connections"] == 64, f"k={k}: 16 NICs x 4 peers = 64 connections, got {s['connections']}")
    check(s["flows"] == 64 * k, f"k={k}: {64 * k} flows, got {s['flows']}")
    check(s["traced"] >= s["flows"] - 2, f"k={k}: nearly every flow traced, {s['traced']} of {s['flows']}")
    check(sum(s["flows_per_uplink"].values()) == s["traced"], f"k={k}: flows per uplink add up to the traced flows")
    check(abs(s["ideal_gbps"] - 1.6) < 1e-6, f"k={k}: ideal 16 x 0.1 Gb/s, got {s['ideal_gbps']}")
    check(0 < s["predicted_fraction"] <= 1 + 1e-9, f"k={k}: paths allow a share of the ideal, {s['predicted_fraction']}")
    check(s["measured_gbps"] >= 0 and s["max_over_mean"] >= 1, f"k={k}: figures")
named = [f for f in d["findings"] if f.get("code") == "RB-FABRIC-ECMP-PORTS-IGNORED"]
check([f["subject"] for f in named] == ["su2-leaf1"], f"su2-leaf1 alone named for ignoring the ports: {[f['subject'] for f in named]}")
check(not d["bad_nodes"]["hosts"], "no host drained")
sys.exit(0 if ok else 1)
PY
echo "ECMP sweep: as expected"

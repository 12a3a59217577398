#!/usr/bin/env bash
# `railbench validate` on a simulated SU (scripts/netns-su): real network namespaces,
# veth, bridges, tc shaping, ranks under a real mpirun across the namespaces.
#   cases.sh CASE RAILBENCH
# CASE: healthy, degraded, ucxdegraded (the degraded case over -t ucx:tcp), blackhole, down,
# latedown (down after the inventory: back up, then for good), inventory, flapping, lossy, delay (needs sch_netem:
# run inside the soft-RoCE VM, whose kernel has it), two-node (a bad link between two
# nodes: suspect at either end, nothing drained), intermittent and steady (burn-ins:
# a flapping link is the one intermittent link; a steady SU has none), swapped (node03's rail0
# and rail1 cables crossed: named as a swap, not as two dead links; then node02's rail1
# cable alone on leaf0: named as on the wrong leaf). Every case also checks the drain
# list (--drain-list) and the JSON's bad_nodes. Exit 77 (ctest: skipped) when this
# host cannot make network namespaces (not root, no iproute2).
source "$(dirname "$0")/../support/case.sh"
case_name=$1 rb=$2
# One prefix per case, so a leftover of one case never meets another.
case_su_up "rbt${case_name:0:4}"
rails=2
[[ $case_name == delay ]] && rails=1
"$su/up.sh" --nodes 4 --rails "$rails" --rate 400 || fail "could not build the simulated SU"

# validate under mpirun, with a hard deadline; leaves exit code, output, JSON and drain
# list in $work. The drain list starts out stale: the run must replace it. Options for
# validate itself go in validate_args; a command to launch mpirun.sh under (setpriv) in
# launch_prefix.
validate_args=() launch_prefix=()
run_validate() {  # run_validate DEADLINE CONFIG SLOTS [mpirun.sh options]
  local deadline=$1 config=$2 slots=$3 start
  shift 3
  start=$(date +%s)
  echo "node99" >"$work/drain.txt"
  timeout --kill-after=10 "$deadline" "${launch_prefix[@]}" "$su/mpirun.sh" --slots "$slots" "$@" -- \
    "$rb" validate --config "$config" --json "$work/v.json" --drain-list "$work/drain.txt" "${validate_args[@]}" \
    >"$work/out" 2>"$work/err"
  rc=$?
  elapsed=$(($(date +%s) - start))
  grep -v '^--\|^ *$' "$work/out"
  ((rc == 124 || rc == 137)) && { cat "$work/err"; fail "validate hung until the ${deadline}s deadline"; }
  ((rc > 128)) && { echo "validate ended by signal $((rc - 128)); its stderr:"; tail -20 "$work/err"; }
  [[ -s $work/v.json ]] || { cat "$work/err"; fail "no results file"; }
  echo "(exit $rc after ${elapsed}s)"
}

# The FAIL findings that blame a link, as "nodeNN railR kind" lines, sorted.
blamed() {
  python3 - "$work/v.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
nodes = [n for r in doc.get("rails", [])[:1] for n in r["nodes"]]
for f in doc["findings"]:
    if f["severity"] == "FAIL" and "node" in f and "rail" in f:
        print(f["subject"].split()[0], "rail%d" % f["rail"], f["kind"])
PY
}

# expect_dead_port "node02 rail0" KIND_REGEX WHAT: the SU failed, the port is blamed for
# KIND and not called miscabled (a dead port is the pair tests' finding, not the cabling's).
expect_dead_port() {
  ((rc != 0)) || fail "$3 must fail the SU, got exit 0"
  expect_blamed "$1" "$2"
  ! named | grep cabling >/dev/null || fail "$3 was called miscabled: $(named)"
}
# expect_only_named "FAIL cabling node03" WHAT: a FAIL verdict (exit 1) whose findings
# (named) are exactly the one given.
# flap_after_inventory SECONDS: in the background (pid in $starter), once validate has
# written its inventory (phase 1 in $work/out, within 60 s), node02 rail1 goes down and
# up every SECONDS until the fault is cleared.
flap_after_inventory() {
  (
    for _ in $(seq 600); do
      grep -q '^# phase 1 inventory' "$work/out" 2>/dev/null && exec "$su/fault.sh" flap node02 rail1 "$1"
      sleep 0.1
    done
  ) >/dev/null 2>&1 &
  starter=$!
}

expect_only_named() {
  ((rc == 1)) || fail "$2 must fail the SU, expected exit 1, got $rc"
  local got
  got=$(named | sort -u)
  echo "named: ${got:-nothing}"
  [[ $got == "$1" ]] || fail "$2: expected exactly '$1' named, got: ${got:-nothing}"
}

expect_blamed() {  # expect_blamed "node03 rail1" KIND_REGEX
  local got
  got=$(blamed | sort -u)
  echo "blamed: ${got:-nothing}"
  [[ $(echo "$got" | grep -c .) -eq 1 ]] || fail "expected exactly one bad link ($1), got: ${got:-none}"
  [[ $got == "$1 "* ]] || fail "expected $1 to be blamed, got: $got"
  [[ $got =~ $2 ]] || fail "expected a '$2' finding, got: $got"
}

# Every finding that names a link (any severity) or a cross-rail pair, as
# "SEVERITY kind subject" lines: a fault must be named on its own link and nowhere else.
named() {
  python3 - "$work/v.json" <<'PY'
import json, sys
for f in json.load(open(sys.argv[1]))["findings"]:
    if "node" in f or f["kind"] == "cross-rail":
        print(f["severity"], f["kind"], f["subject"])
PY
}

# The drain list holds exactly HOSTLIST and a newline, or nothing when HOSTLIST is "";
# the JSON's bad_nodes says the same, and names SUSPECTS suspect links.
expect_drain() {  # expect_drain HOSTLIST [SUSPECTS]
  local want=$1 suspects=${2:-0}
  [[ -f $work/drain.txt ]] || fail "no drain list written"
  echo "drain list: '$(cat "$work/drain.txt")'"
  if [[ -z $want ]]; then
    [[ ! -s $work/drain.txt ]] || fail "the drain list should be empty, it holds: $(cat "$work/drain.txt")"
  else
    [[ $(cat "$work/drain.txt") == "$want" && $(wc -l <"$work/drain.txt") -eq 1 ]] ||
      fail "the drain list should be exactly '$want', it holds: '$(cat "$work/drain.txt")'"
  fi
  python3 - "$work/v.json" "$want" "$suspects" <<'PY' || fail "bad_nodes in the JSON disagrees with the drain list"
import json, sys
bad = json.load(open(sys.argv[1]))["bad_nodes"]
want, suspects = sys.argv[2], int(sys.argv[3])
assert bad["hostlist"] == want, bad
assert sorted(bad["reasons"]) == sorted(bad["hosts"]), bad
assert all(bad["reasons"][h] for h in bad["hosts"]), bad
assert len(bad["suspect_links"]) == suspects, bad["suspect_links"]
print("bad_nodes: hosts %s, suspect links %s" % (bad["hosts"], [(l["subject"], l["ends"]) for l in bad["suspect_links"]]))
PY
}

# A copy of netns-4x2 for the burn-ins: phase 2 only (no cross-rail checks, no
# collectives) and a short latency test, so the windows are short (~2 s) and the case
# stays within two minutes.
burn_in_config() {  # burn_in_config FILE
  python3 - "$here/../../configs/netns-4x2.json" "$1" <<'PY'
import json, re, sys
text = re.sub(r"^\s*//.*$", "", open(sys.argv[1]).read(), flags=re.M)
c = json.loads(text)
c["name"] = "netns-4x2-burn-in"
c["tests"].update({"cross_rail": False, "collectives": False, "lat_iters": 200})
# 8 ranks busy-polling on 2 shared cores make a healthy link's window swing by up to 4x
# when the host is loaded (CI runs other work beside): only a window in which a link all
# but stopped (below 5% of its rail) counts here; the flap itself is seen by the NIC's
# link-down counters, window by window.
c["thresholds"]["burn_in_below_median"] = 0.05
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
}

verdict() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['verdict'])" "$work/v.json"; }
has_key() { python3 -c "import json,sys; sys.exit(0 if sys.argv[2] in json.load(open(sys.argv[1])) else 1)" "$work/v.json" "$1"; }

case $case_name in
  healthy)
    run_validate 300 netns-4x2 2
    ((rc == 0)) || fail "a healthy SU must pass (exit $rc)"
    [[ $(verdict) == PASS ]] || fail "verdict $(verdict)"
    python3 - "$work/v.json" <<'PY' || fail "per-rail matrices incomplete"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["status"] == "complete", doc["status"]
assert len(doc["rails"]) == 2
for r in doc["rails"]:
    n = len(r["nodes"])
    assert n == 4
    for a in range(n):
        for b in range(n):
            if a != b:
                assert r["bw_gbs"][a][b] > 0 and r["lat_p99_us"][a][b] > 0, (r["rail"], a, b)
assert len(doc["cross_rail_pairs"]) == 4
assert [c["collective"] for c in doc["collectives"]] == ["allreduce", "alltoall"]
PY
    # No false alarm on a healthy SU, not even a warning about an intermittent link.
    ! named | grep intermittent >/dev/null || fail "a healthy link was called intermittent: $(named)"
    expect_drain ""
    grep -qF "# drain list: $work/drain.txt (empty: no node to drain)" "$work/out" || fail "the drain list line is missing"
    # The cabling check heard every other node on each port's own rail and no other rail
    # (a host answers ARP for all its addresses on any port; its MAC tells them apart).
    python3 - "$work/v.json" <<'PY' || fail "the cabling check did not hear every port's own rail, and only it"
import json, sys
ports = json.load(open(sys.argv[1]))["cabling"]
assert len(ports) == 8, ports
for p in ports:
    want = [3 if r == p["rail"] else 0 for r in range(2)]
    assert p["probed"] and p["answered_per_rail"] == want, p
PY
    # The JSON keeps the shape it had before the layout change (findings vary by run).
    python3 "$here/../compat/json_shape.py" "$work/v.json" --expect "$here/../compat/validate.shape.json" \
      --ignore findings || fail "validate's JSON changed shape"
    ;;
  degraded)
    "$su/fault.sh" degrade node03 rail1 20
    run_validate 300 netns-4x2 2
    ((rc != 0)) || fail "a degraded link must fail the SU"
    expect_blamed "node03 rail1" "bandwidth"
    grep -q "confirmed against" "$work/out" || fail "the finding was not confirmed against a second partner"
    expect_drain "node03"
    ;;
  ucxdegraded)
    # The degraded case measured through UCX's tcp transport instead of libfabric's: the
    # same link named, and no healthy one (UCX picks its own protocols per size, so these
    # are the pair tests' figures through another stack, not a copy of the case above).
    "$su/fault.sh" degrade node03 rail1 20
    validate_args=(-t ucx:tcp)
    run_validate 300 netns-4x2 2
    grep -q "transport ucx:tcp" "$work/out" || fail "validate did not run over ucx:tcp"
    # UCX's tcp leaves by the kernel's route to the peer, so no cross-rail pair is judged.
    grep -q "cross-rail checks left out over ucx:tcp: it connects without binding" "$work/out" || fail "the cross-rail checks were not left out"
    ! has_key cross_rail_pairs || fail "cross-rail pairs ran over ucx:tcp"
    ((rc != 0)) || fail "a degraded link must fail the SU"
    expect_blamed "node03 rail1" "bandwidth"
    expect_drain "node03"
    ;;
  latedown)
    # node02 rail1 goes down once the inventory has read it up, before the transport
    # opens on it (libfabric then lists no domain for it). Back 3 s later: the open is
    # tried again and the run goes on, the link judged by its pair tests. Still down past
    # the pair deadline: a FAIL on that port, results and drain list written, no traffic.
    late_fault() {  # late_fault SECONDS_DOWN (0: it stays down)
      (
        for _ in $(seq 1200); do
          grep -q '^# phase 1 inventory' "$work/out" 2>/dev/null && break
          sleep 0.05
        done
        "$su/fault.sh" down node02 rail1
        if (($1 > 0)); then
          sleep "$1"
          "$su/fault.sh" clear node02 rail1
        fi
      ) >/dev/null 2>&1 &
      starter=$!
    }
    late_fault 3
    run_validate 300 netns-4x2 2
    wait "$starter"
    grep -q "transport refused to open while node02 rail1 .* went down after the inventory; back up" "$work/out" ||
      fail "the open was not tried again once the port came back"
    has_key rail_pairs || fail "no pair test ran after the port came back"
    got=$(named | sort -u)
    [[ $(echo "$got" | grep -v ' node02 rail1 ' | grep -vc '^WARN ') -eq 0 ]] ||
      fail "only node02 rail1 may fail, got: $got"
    "$su/fault.sh" clear >/dev/null
    late_fault 0
    run_validate 300 netns-4x2 2
    wait "$starter"
    "$su/fault.sh" clear >/dev/null
    ((rc == 1)) || fail "a port down since the inventory must fail the SU (exit $rc)"
    grep -q "node02 rail1 (leaf1): port rail1 went down after the inventory and stayed down" "$work/out" ||
      fail "the port that stayed down is not named"
    expect_blamed "node02 rail1" "inventory"
    ! has_key rail_pairs || fail "traffic ran without node02 rail1"
    expect_drain "node02"
    ;;
  blackhole)
    # The link stays up but carries nothing: only the pair deadlines can find it.
    "$su/fault.sh" blackhole node02 rail0
    # Each of its pair tests waits out the pair deadline: 3 s, not the config's 8 (a
    # healthy pair test here takes well under a second).
    validate_args=(--pair-timeout 3)
    run_validate 240 netns-4x2 2
    # Link up and reaching nobody: dead, which the cabling check leaves to the pair tests.
    expect_dead_port "node02 rail0" "unreachable" "an unreachable link"
    expect_drain "node02"
    has_key collectives && [[ $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['collectives'])" "$work/v.json") == skipped* ]] ||
      fail "collectives should be skipped when pairs cannot talk"
    ;;
  down)
    "$su/fault.sh" down node04 rail1
    run_validate 120 netns-4x2 2
    expect_dead_port "node04 rail1" "inventory" "a down port"
    ! has_key rail_pairs || fail "traffic ran although a port was down"
    expect_drain "node04"
    grep -qF "# bad nodes (drain): node04 (1 node(s))" "$work/out" || fail "the bad nodes line is missing"
    ;;
  inventory)
    # The config says 3 rails; the nodes have 2.
    run_validate 120 netns-4x3 3
    ((rc != 0)) || fail "a missing NIC must fail the SU"
    got=$(blamed | sort -u)
    [[ $(echo "$got" | grep -c 'rail2 inventory') -eq 4 ]] || fail "expected rail2 missing on all 4 nodes, got: $got"
    [[ $(echo "$got" | grep -vc 'rail2') -eq 0 ]] || fail "only rail2 should be named, got: $got"
    grep -q "interface rail2 not found on the node (it has: lo, mgmt0, rail0, rail1)" "$work/out" ||
      fail "the finding should list what the node has"
    ! has_key rail_pairs || fail "traffic ran before the inventory was right"
    # Every node failing on one rail is the rail's (switch or config), not four nodes'.
    expect_drain "" 1
    grep -qF "rail2 (every node)" "$work/out" || fail "the rail-wide suspect is not printed"
    ;;
  flapping)
    # A loose cable: node02 rail1 goes down for 1 s and up for 1 s, over and over, from
    # the end of the inventory (which a port down at that moment would fail on its own,
    # the 'down' case) to the end of the run. Short enough that it goes down during the
    # pair tests however fast this host runs them (they can end within 3 s), and twice
    # or more in the run (link_downs_fail): flapping, not a single blip.
    flap_after_inventory 1
    run_validate 300 netns-4x2 2
    kill "$starter" 2>/dev/null
    wait "$starter" 2>/dev/null
    "$su/fault.sh" list
    "$su/fault.sh" clear >/dev/null
    ((rc == 1)) || fail "a flapping link must fail the SU (exit $rc, verdict $(verdict))"
    got=$(named | sort -u)
    echo "named: ${got:-nothing}"
    [[ -n $got ]] || fail "the flapping link was not named"
    # Only the flapping link may fail. A healthy link may draw a WARN "unsteady ... passed
    # a re-test: watch it" when a window of its pair tests lost the CPU to the flap's
    # link changes on this shared host (CI: node01 rail0, one window 66% slow); a WARN
    # does not fail the SU nor drain the node, which expect_drain checks.
    [[ $(echo "$got" | grep -v ' node02 rail1 ' | grep -vc '^WARN ') -eq 0 ]] ||
      fail "only node02 rail1 may fail, and other links at most WARN, got: $got"
    expect_blamed "node02 rail1" "intermittent|unreachable|bandwidth|bidirectional|latency"
    expect_drain "node02"
    python3 - "$work/v.json" <<'PY' || fail "the link's carrier changes are not in the results"
import json, sys
doc = json.load(open(sys.argv[1]))
link = [l for l in doc["rails"][1]["links"] if l["node"] == "node02"][0]
assert link["carrier_changes"] >= 1, link
others = [l for r in doc["rails"] for l in r["links"] if (r["rail"], l["node"]) != (1, "node02")]
assert all(l["carrier_changes"] == 0 for l in others), others
PY
    [[ -z $(ls "$RB_SU_STATE"/flap-*.pid 2>/dev/null) ]] || fail "fault.sh clear left a flap loop's pid file"
    ;;
  lossy)
    # A lossy cable: 1 in 4 of node03 rail1's data packets dropped, both ways (a u32
    # filter into an empty queue; this kernel has no netem or policer). The NIC-side
    # evidence a rank can see is its own interface's qdisc drops: the finding on that
    # link must name them, and its partners must show none.
    "$su/fault.sh" lossy node03 rail1 0x3 || exit 77  # no cls_u32: says so, skipped
    run_validate 300 netns-4x2 2
    # Its bandwidth usually fails too, but the drops must be named either way (a WARN
    # alone leaves the verdict PASS).
    ((rc == 0 || rc == 1)) || fail "validate ended with exit $rc"
    got=$(named | sort -u)
    echo "named: ${got:-nothing}"
    [[ $(echo "$got" | grep -vc ' node03 rail1 ') -eq 0 ]] || fail "only node03 rail1 may be named, got: $got"
    python3 - "$work/v.json" <<'PY' || fail "the lossy link's finding does not name its drops"
import json, sys
doc = json.load(open(sys.argv[1]))
mine = [f for f in doc["findings"] if f.get("node") == 2 and f.get("rail") == 1]
assert mine, doc["findings"]
assert any("qdisc/drops" in f["reason"] and "; partners: " in f["reason"] for f in mine), mine
print("finding:", mine[0]["reason"])
# Every pair test carries both sides' counters; drops appear on node03 rail1's side only.
drops = {}
for p in doc["rail_pairs"] + doc["cross_rail_pairs"] + doc.get("retest_pairs", []):
    for side, node, rail in (("counters_a", p["node_a"], p["rail_a"]), ("counters_b", p["node_b"], p["rail_b"])):
        assert side in p, p
        d = p[side].get("kinds", {}).get("drop", 0)
        drops[(node, rail)] = drops.get((node, rail), 0) + d
print("drops per (node, rail):", {k: v for k, v in sorted(drops.items()) if v})
assert drops[(2, 1)] >= 100, drops
assert all(v <= drops[(2, 1)] / 10 for k, v in drops.items() if k != (2, 1)), drops
PY
    ;;
  intermittent | steady)
    # validate burn-in (--duration / --cycles): phase 2 again and again in windows. In
    # 'intermittent' node02 rail1 goes down for 4 s and up for 4 s from the end of the
    # inventory on: it, and no other link, is intermittent (low in some windows, not
    # all). 'steady': no fault, no link intermittent, the SU passes.
    burn_in_config "$work/burn.json"
    if [[ $case_name == intermittent ]]; then
      flap_after_inventory 4
      validate_args=(--duration 28s)
      run_validate 150 "$work/burn.json" 2
      kill "$starter" 2>/dev/null
      wait "$starter" 2>/dev/null
      "$su/fault.sh" clear >/dev/null
    else
      validate_args=(--cycles 6)
      run_validate 150 "$work/burn.json" 2
    fi
    python3 - "$work/v.json" "$case_name" <<'PY' || fail "burn-in results"
import json, sys
doc, case = json.load(open(sys.argv[1])), sys.argv[2]
b = doc["burn_in"]
n = len(b["windows"])
links = {l["link"]: l for l in b["links"]}
flaky = sorted(k for k, l in links.items() if l["intermittent"])
print(f"{n} windows, {len(links)} links, intermittent: {flaky}")
for k, l in sorted(links.items()):
    print(f"  {k}: low {l['low_windows']}/{len(l['values'])}, min {l['min']:.4f} median {l['median']:.4f} "
          f"max {l['max']:.4f} GB/s, worst window {l.get('worst_window')} at +{l.get('worst_at_s', 0):.1f} s")
assert len(links) == 8, sorted(links)
assert all(len(l["values"]) == n for l in links.values())
burn = [f for f in doc["findings"] if f["reason"].startswith("burn-in:")]
went_down = sorted(k for k, l in links.items() if l["flagged_windows"])
print(f"went down (NIC counters) in some window: {went_down}")
if case == "steady":
    assert n == 6, n
    assert flaky == [] and burn == [] and went_down == [], (flaky, burn, went_down)
else:
    assert n >= 4, f"only {n} windows in 28 s"
    assert flaky == ["node02 rail1"], flaky
    assert went_down == ["node02 rail1"], went_down
    assert [(f["severity"], f["kind"], f["subject"]) for f in burn] == [("FAIL", "intermittent", "node02 rail1 (leaf1)")], burn
PY
    if [[ $case_name == steady ]]; then
      ((rc == 0)) || fail "a steady SU must pass its burn-in (exit $rc, verdict $(verdict))"
    else
      ((rc == 1)) || fail "an intermittent link must fail the SU (exit $rc)"
      grep -q '^# node02 rail1 intermittent: [0-9]* of [0-9]* windows low: ' "$work/out" ||
        fail "the intermittent link's line is missing"
      expect_drain "node02"
    fi
    grep -q '^# burn-in summary: validate' "$work/out" || fail "no burn-in summary table"
    ;;
  swapped)
    # node03's rail0 cable in leaf1 and its rail1 cable in leaf0: both links up, so the
    # inventory passes; the cabling check must name the swap, once, on node03, and
    # nothing may call those two good cables unreachable.
    "$su/fault.sh" swap node03 rail0 rail1
    "$su/fault.sh" list
    run_validate 120 netns-4x2 2
    expect_only_named "FAIL cabling node03" "a swapped pair of cables"
    grep -F "# cabling: node03: rail0 and rail1 appear swapped (rail0 reaches leaf1's nodes, rail1 reaches leaf0's)" \
      "$work/out" || fail "the swap line is missing"
    ! has_key rail_pairs || fail "traffic ran through the crossed cables"
    python3 - "$work/v.json" <<'PY' || fail "the cabling results do not show the crossed ports"
import json, sys
ports = {(p["node"], p["rail"]): p["answered_per_rail"] for p in json.load(open(sys.argv[1]))["cabling"]}
print("node03 heard per rail:", ports[("node03", 0)], ports[("node03", 1)])
assert ports[("node03", 0)] == [0, 3] and ports[("node03", 1)] == [3, 0], ports
assert ports[("node01", 0)] == [2, 1] and ports[("node01", 1)] == [1, 2], ports
PY
    expect_drain "node03"
    "$su/fault.sh" clear >/dev/null
    [[ $("$su/fault.sh" list) == no\ faults* ]] || fail "fault.sh clear left the swap in place"
    # One cable on the wrong leaf (node02's rail1 port in leaf0, its rail0 where it
    # belongs): that one link is named, with the leaf it reaches and where it belongs.
    "$su/fault.sh" miscable node02 rail1 rail0
    run_validate 120 netns-4x2 2
    expect_only_named "FAIL cabling node02 rail1 (leaf1)" "a cable on the wrong leaf"
    grep -F "cabled to leaf0 (expected leaf1): it reaches leaf0's nodes and none of leaf1's; move the cable to leaf1" \
      "$work/out" || fail "the wrong-leaf line is missing"
    expect_drain "node02"
    "$su/fault.sh" clear >/dev/null
    # Without CAP_NET_RAW (dropped from the bounding set, so no rank has it) the check
    # is skipped with one line saying why, and the mended SU passes.
    launch_prefix=(setpriv --bounding-set -net_raw --)
    run_validate 120 netns-4x2 2
    grep -F "# cabling check: skipped on 8 of 8 port(s): needs CAP_NET_RAW" "$work/out" ||
      fail "no line saying the cabling check was skipped for want of CAP_NET_RAW"
    ((rc == 0)) || fail "the mended SU must pass (exit $rc)"
    ;;
  delay)
    "$su/fault.sh" delay node02 rail0 25 || exit 77  # no netem: says so, skipped
    run_validate 600 netns-4x1-delay 1
    # Under the VM's emulated CPUs a healthy link's timed windows can stall long enough to
    # draw a finding of their own (seen: node04 "intermittent", confirmed on its re-test):
    # when a link other than the delayed one is blamed, measure once more, and judge
    # that run as strictly as the first.
    others=$(blamed | sort -u | grep -v '^node02 rail0 ')
    if [[ -n $others ]]; then
      echo "blamed beside node02 rail0: ${others//$'\n'/; }: measuring once more"
      run_validate 600 netns-4x1-delay 1
    fi
    ((rc != 0)) || fail "a link with 25 ms added must fail the SU"
    expect_blamed "node02 rail0" "latency"
    expect_drain "node02"
    ;;
  two-node)
    # Two nodes of the SU, node02 rail0 unplugged from its leaf: the one pair on rail0
    # fails and nothing tells which end is bad. Both links are named, at either end;
    # no node is drained.
    cat >"$work/su2.json" <<'EOF'
{ "name": "netns-2x2", "nodes": "node[01-02]", "gpus_per_node": 2, "transport": "ofi:tcp",
  "rails": [ {"gpu": 0, "nic": "rail0", "leaf": "leaf0", "speed_gbps": 10, "line_rate_gbps": 0.4, "mtu": 1500},
             {"gpu": 1, "nic": "rail1", "leaf": "leaf1", "speed_gbps": 10, "line_rate_gbps": 0.4, "mtu": 1500} ],
  "thresholds": { "bw_min_fraction": 0.4, "bidir_min_fraction": 0.5, "rel_bw_below_median": 0.35,
                  "rel_lat_above_median": 3, "rel_lat_min_us": 5000, "mad_k": 3,
                  "allreduce_busbw_min_fraction": 0.1, "alltoall_busbw_min_fraction": 0.1 },
  "tests": { "bw_bytes": "16K", "bw_window": 32, "bw_iters": 6, "lat_bytes": 8, "lat_iters": 2000,
             "collective_bytes": "1M", "collective_iters": 3, "pair_timeout_s": 8 } }
EOF
    "$su/fault.sh" blackhole node02 rail0
    validate_args=(--pair-timeout 3)  # as in blackhole
    run_validate 240 "$work/su2.json" 2 --nodes node01,node02
    ((rc == 1)) || fail "a dead link must fail the SU (exit $rc)"
    expect_drain "" 2
    python3 - "$work/v.json" <<'PY' || fail "the suspect links should name both ends of rail0"
import json, sys
links = json.load(open(sys.argv[1]))["bad_nodes"]["suspect_links"]
assert sorted(l["subject"].split()[0] for l in links) == ["node01", "node02"], links
assert all(l["ends"] == ["node01", "node02"] and "rail0" in l["subject"] for l in links), links
PY
    grep -qF "# suspect link, not drained: node01 rail0 (leaf0): the fault may lie with any of node01, node02" \
      "$work/out" || fail "the suspect link line is missing"
    ;;
  *)
    fail "unknown case '$case_name'"
    ;;
esac
echo "PASS: $case_name"

#!/usr/bin/env bash
# railbench congestion on the simulated SU (GPCNeT's method): real ranks in real
# namespaces, each opening its slot's rail. 4 nodes x 2 rails at 100 Mb/s.
#   2:1 spine (each leaf's uplink 200 Mb/s for 400 Mb/s of nodes): a cross-spine victim
#       (node01 rail0 <-> node02 rail1) shares leaf0's uplink with the cross-rail
#       aggressors and must lose bandwidth and latency; a same-leaf victim (rail0 <->
#       rail0) shares no port with them and must keep its bandwidth (impact about 1).
#   1:1 spine: the same cross-spine victim keeps its bandwidth: the impact at 2:1 came
#       from the oversubscribed uplink, not from the host.
# Bandwidth is the figure judged for "about 1": 8 ranks on 2 cores make the latency tail
# mostly scheduler noise (see README), so the small-message victims (ping-pong, 8 B
# all-reduce) are only required to get far worse at 2:1, at least one of them.
#   congestion_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_su_up rbtcong

# Bad input, before any SU: a job too small to place victims and aggressors is a usage
# error naming the fix (exit 2) within seconds.
rb_mpirun_deadline 60 2 "$rb" congestion -t ofi:tcp --rails lo --ranks-per-node 1 >"$work/small.out" 2>&1
rc=$?
((rc != 0)) || fail "congestion with 2 ranks exited 0"
grep "launch 4 or more ranks" "$work/small.out" >/dev/null || fail "2 ranks: the error does not say to launch 4"
rb_mpirun_deadline 60 4 "$rb" congestion -t ofi:tcp --rails lo --ranks-per-node 1 --aggressors flood >"$work/pattern.out" 2>&1
((rc = $?)) && grep "unknown aggressor 'flood': use incast, broadcast, alltoall or cross-rail" "$work/pattern.out" \
  >/dev/null || fail "--aggressors flood: exit $rc without the patterns named"

# congestion NAME [options]: runs on the SU, JSON to $work/NAME.json, text to NAME.out.
congestion() {
  local name=$1
  shift
  timeout --kill-after=10 240 "$su/mpirun.sh" -- "$rb" congestion -t ofi:tcp --slot-rails rail0,rail1 \
    -n 300 -w 30 --bw-iters 20 --aggressor-nap 200 --timeout 60 --json "$work/$name.json" "$@" \
    >"$work/$name.out" 2>&1 || fail "congestion $name exited $?"
  grep -v '^# results' "$work/$name.out"
}
# impact FILE PLACEMENT AGGRESSOR METRIC PERCENTILE: one impact factor from the JSON.
impact() {
  python3 - "$@" <<'PY'
import json, sys
f, placement, aggressor, metric, pct = sys.argv[1:]
rows = [r for r in json.load(open(f))["results"]
        if r["placement"] == placement and r["aggressor"] == aggressor and r["metric"] == metric]
assert len(rows) == 1, f"{len(rows)} rows for {placement} {aggressor} {metric}"
print(rows[0]["impact"][pct])
PY
}
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

"$su/up.sh" --nodes 4 --rails 2 --rate 100 --oversubscription 2 >/dev/null || fail "up.sh at 2:1 failed"
congestion oversub2 --aggressors cross-rail,alltoall,incast
python3 - "$work/oversub2.json" <<'PY' || fail "the JSON does not hold every victim metric under every aggressor"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "complete", d["status"]
rows = d["results"]
assert len(rows) == 2 * 3 * 3, len(rows)  # placements x aggressors x metrics
assert sorted({r["metric"] for r in rows}) == ["allreduce", "bandwidth", "latency"], rows
for r in rows:
    for k in ("isolated", "congested", "impact"):
        assert set(r[k]) >= {"p50", "p99", "p99_9"}, (k, r[k])
    assert r["isolated"]["p50"] > 0 and r["congested"]["p50"] > 0, r
    assert r["aggressor_gbps"] > 0 and not r["aggressor_capped"], r
    assert r["victim_slots"] == ([0, 1] if r["placement"] == "cross-spine" else [0, 0]), r
PY
spine_bw=$(impact "$work/oversub2.json" cross-spine cross-rail bandwidth p99)
spine_lat=$(impact "$work/oversub2.json" cross-spine cross-rail latency p99)
spine_ar=$(impact "$work/oversub2.json" cross-spine cross-rail allreduce p99)
echo "2:1 cross-spine victim under cross-rail aggressors: bandwidth impact p99 $spine_bw, latency impact p99" \
  "$spine_lat, 8 B all-reduce impact p99 $spine_ar"
at_least "$spine_bw" 1.3 || fail "at 2:1 the cross-spine victim's bandwidth impact is $spine_bw (< 1.3)"
# The small-message victims' tails: 300 ping-pongs last a few ms and may fall between
# the aggressors' TCP sawtooth peaks (p99 x1.7 in one CI run, x250 in others), so the
# check is that at least one of the two small victims met the uplink's queue.
small=$(python3 -c "print(max($spine_lat, $spine_ar))")
at_least "$small" 3 ||
  fail "at 2:1 neither small-message victim's p99 impact reached 3 (latency $spine_lat, all-reduce $spine_ar)"
for agg in cross-rail alltoall incast; do
  for pct in p50 p99; do
    leaf=$(impact "$work/oversub2.json" same-leaf $agg bandwidth $pct)
    at_most "$leaf" 1.25 || fail "the same-leaf victim's bandwidth impact $pct under $agg is $leaf (> 1.25)"
  done
done

"$su/down.sh" >/dev/null || fail "down.sh failed"
"$su/up.sh" --nodes 4 --rails 2 --rate 100 >/dev/null || fail "up.sh at 1:1 failed"
congestion full --victims cross-spine --aggressors cross-rail
full_bw=$(impact "$work/full.json" cross-spine cross-rail bandwidth p99)
full_lat=$(impact "$work/full.json" cross-spine cross-rail latency p99)
echo "1:1 cross-spine victim under cross-rail aggressors: bandwidth impact p99 $full_bw, latency impact p99 $full_lat"
at_most "$full_bw" 1.2 || fail "at 1:1 the cross-spine victim's bandwidth impact is $full_bw (> 1.2)"
echo "PASS: 2:1 cross-spine bandwidth impact $spine_bw (1:1: $full_bw), same-leaf about 1"

#!/usr/bin/env bash
# kvcache --serve on a simulated SU (scripts/netns-su: namespaces as nodes, 2 rails of
# 400 Mb/s, a real mpirun across them): node01 and node02 prefill, node03 and node04
# decode, each request pinned to one rail (--pin-rails: each pair's slot 1 on rail 1),
# with node03's rail1 cable cut to a tenth of its rate. The per-rail table must make
# rail 1 the worst at p99 (transfer and total), the text must name it, and the rail
# utilisation must show rail 1 carrying its half of the bytes at a lower rate than its
# line. Exit 77 (ctest: skipped) where network namespaces cannot be made.
#   serve_su.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_su_up rbtkvsu
"$su/up.sh" --nodes 4 --rails 2 --rate 400 >/dev/null || fail "could not build the simulated SU"
"$su/fault.sh" degrade node03 rail1 10 || fail "fault.sh degrade"
# 2 MiB requests (16 tokens of llama-3.1-8b): 42 ms on a healthy 400 Mb/s link, 420 ms on
# the cut one; 4 req/s keeps every link below half its rate, so the gap between the rails
# is the cable's, not a queue's. p99 of 12 requests a rail is the slowest one: a tenth
# (not a quarter) keeps the cut rail's requests slower than a healthy one stalled by a
# few hundred ms on a loaded host.
start=$(date +%s)
timeout --kill-after=10 90 "$su/mpirun.sh" --slots 1 -- "$rb" kvcache --serve -t ofi:tcp --rails rail0,rail1 \
  --model llama-3.1-8b --tokens 16 --mode per-block --prefill-ranks 0,1 --decode-ranks 2,3 --concurrency 2 \
  --rate 4 --requests 24 --pin-rails --line-rate 0.4 -c --json "$work/r.json" >"$work/out" 2>"$work/err"
rc=$?
grep -v '^ *$' "$work/out"
echo "(exit $rc after $(($(date +%s) - start)) s)"
((rc == 0)) || { tail -20 "$work/err"; fail "exit code $rc (124: the 90 s deadline)"; }
grep -q "^# slowest rail: rail 1 " "$work/out" || fail "the text does not name rail 1 as the slowest"
python3 - "$work/r.json" <<'PY' || exit 1
import json, sys
e = json.load(open(sys.argv[1]))["results"][-1]
assert e["wrong"] == 0, f"{e['wrong']} wrong bytes"
rails = {r["rail"]: r for r in e["per_rail"]}
for what in ("request_us", "total_us"):
    p = {k: r[what]["p99"] for k, r in rails.items()}
    print(f"{what} p99 per rail: {p}")
    # The cut cable takes 10x a healthy one's time; 1.5x leaves room for a loaded host.
    assert p[1] > 1.5 * p[0], f"rail 1's {what} p99 {p[1]:.0f} us is not the worst by far (rail 0 {p[0]:.0f} us)"
util = {r["rail"]: r for r in e["rails"]}
print("utilisation:", {k: (round(r["gbps"], 4), round(r["line_fraction"], 3)) for k, r in util.items()})
# Each rail carries half of the requests' bytes (the pinning alternates slots).
assert util[0]["bytes"] == util[1]["bytes"] == e["requests"] // 2 * e["bytes"], util
for r in util.values():
    assert 0 < r["line_fraction"] < 1, r
print("PASS")
PY

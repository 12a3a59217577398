#!/usr/bin/env bash
# kvcache --serve under a real mpirun (2 ranks), with a hard deadline:
#   serve_case.sh low-load|overload PROVIDER RAILBENCH
# low-load: a fixed rate far below capacity is carried (carried within 15% of offered,
# no overload). overload: a rate far above capacity is reported as overload, queueing
# grows past the transfer time, and the run still ends (bounded by its request count).
source "$(dirname "$0")/../support/case.sh"
case_=$1 prov=$2 rb=$3
case_work
rails=()
[[ $prov == tcp ]] && rails=(--rails lo)
common=(kvcache --serve -t "ofi:$prov" "${rails[@]}" --mode per-block --seed 5 --json "$work/r.json")
if [[ $case_ == low-load ]]; then
  # 16 tokens of llama-3.1-8b (2 MiB) at 50/s (0.1 GB/s): a few % of either provider's
  # capacity on a quiet host, and still under half of it where the cores are shared (a
  # CI run beside sanitizer builds moved 2 MiB over ofi:tcp in 11 ms, and 100/s fell
  # behind). 300 requests (6 s of arrivals), not 100: carried counts up to the last ack,
  # so a rank descheduled for a few hundred ms near the end on a saturated host took 10%
  # off a 2 s window and failed the run; over 6 s the same stall costs 3%, while a
  # harness that really falls behind (queueing through the run) still misses 15%.
  args=(--tokens 16 --rate 50 --requests 300 --concurrency 2 -c --slo p99:1s)
else
  # 600 requests of 2 MiB offered at 20,000/s: far beyond either provider.
  args=(--tokens 16 --rate 20000 --requests 600 --concurrency 1)
fi
start=$(date +%s)
rb_mpirun_deadline 120 2 "$rb" "${common[@]}" "${args[@]}" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out" "$work/err"
echo "elapsed $(($(date +%s) - start)) s, exit $rc"
((rc == 0)) || fail "exit code $rc (124: the 120 s deadline)"
python3 - "$work/r.json" "$case_" <<'PY' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["status"] == "complete" if "status" in doc else True, doc.get("status")
e = doc["results"][0]
off, car = e["offered_rps"], e["carried_rps"]
print(f"offered {off:.1f} req/s, carried {car:.1f} req/s, overload {e['overload']}, "
      f"queue p99 {e['queue_us']['p99']:.0f} us, transfer p50 {e['request_us']['p50']:.0f} us")
assert e["requests"] >= 200, e["requests"]
if sys.argv[2] == "low-load":
    # 15%: the last ack ends the window, so one scheduler stall on this shared host shows.
    assert abs(car - off) <= 0.15 * off, "carried load is not within 15% of the offered"
    assert not e["overload"]
    assert e["wrong"] == 0
    assert 0 <= e["slo"]["goodput"] <= 1
else:
    assert e["overload"], "a rate far above capacity must be reported as overload"
    assert car < 0.5 * off
    assert e["queue_us"]["p99"] > 10 * e["request_us"]["p50"], "queueing must grow past the transfer time"
print("PASS")
PY
grep -q "OVERLOAD" "$work/out" || [[ $case_ == low-load ]] || fail "no OVERLOAD line"

#!/usr/bin/env bash
# kvcache --serve --prefill-us-per-token under a real mpirun (2 ranks, shm), with a hard
# deadline: serve_prefill.sh RAILBENCH
# 2,000 us per token x 16 tokens: each request's KV is ready 32 ms or more after it
# arrives (more when the prefill rank is still busy with the one before). The total time
# (from arrival) grows by that much; the queue (from ready) stays far below it.
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_work
rb_mpirun_deadline 60 2 "$rb" kvcache --serve -t ofi:shm --layers 2 --kv-heads 1 --head-dim 8 --tokens 16 \
  --mode per-block --concurrency 2 --rate 40 --requests 30 --seed 3 --prefill-us-per-token 2000 -c \
  --json "$work/r.json" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out" "$work/err"
((rc == 0)) || fail "exit code $rc (124: the 60 s deadline)"
grep -q "^# prefill (2000 us per token" "$work/out" || fail "no prefill line"
python3 - "$work/r.json" <<'PY' || exit 1
import json, sys
e = json.load(open(sys.argv[1]))["results"][0]
pre, q, x, t = e["prefill_us"], e["queue_us"], e["request_us"], e["total_us"]
print(f"prefill min {pre['min']:.0f} p50 {pre['p50']:.0f} max {pre['max']:.0f}; queue p50 {q['p50']:.0f} "
      f"max {q['max']:.0f}; xfer p50 {x['p50']:.0f}; total min {t['min']:.0f} p50 {t['p50']:.0f} us")
assert e["wrong"] == 0
assert pre["min"] >= 32000 - 1e-6, "a request ready before its 16 x 2000 us of compute"
# 40 req/s against 32 ms of serial compute a request: the prefill rank falls behind.
assert pre["max"] > 2 * 32000, "requests did not queue on the prefill rank's compute"
assert t["min"] >= 32000, "a total shorter than the compute: total must count from arrival"
assert t["p50"] >= pre["p50"], "the total must include the time until ready"
assert q["p50"] < 16000, "queueing must count from ready, not from arrival"
print("PASS")
PY

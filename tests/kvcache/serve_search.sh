#!/usr/bin/env bash
# kvcache --serve --find-max-rate under a real mpirun (ofi:shm, a small KV geometry so a
# search takes seconds), with a hard deadline each:
#   serve_search.sh repeat NP RAILBENCH
#     three searches in a row on the same system agree: their max rates' spread (max - min)
#     within 15% of their median, each at most its measured capacity, each probe judged on enough
#     requests (and every miss says why).
#   serve_search.sh overload NP RAILBENCH
#     a --rate run far above capacity, with an SLO loose enough that its percentile is
#     met: the OVERLOAD verdict fails the run all the same.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/lib/mpirun.sh"
case_=$1 np=$2 rb=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 8 KiB a request (2 layers x 1 KV head x 8 dims x 2 B x K,V = 64 B per token, 128 tokens).
geometry=(-t ofi:shm --layers 2 --kv-heads 1 --head-dim 8 --tokens 128 --mode per-block --concurrency 2)
# One rank a core where they fit: two busy-polling ranks left on one core carry 1% of what
# they carry apart, which a search would measure faithfully and the next one not.
((np <= $(nproc))) && export RB_MPI_BIND=core
if [[ $case_ == overload ]]; then
  rb_mpirun_deadline 60 "$np" "$rb" kvcache --serve "${geometry[@]}" --rate 1e6 --requests 2000 --slo p99:60s \
    --json "$work/r.json" >"$work/out" 2>&1
  rc=$?
  cat "$work/out"
  ((rc == 0)) || { echo "FAIL: exit code $rc (124: the 60 s deadline)"; exit 1; }
  grep -q "^# OVERLOAD: carried" "$work/out" || { echo "FAIL: no OVERLOAD line"; exit 1; }
  grep -q "^# verdict at .*: missed: overload: carried" "$work/out" || { echo "FAIL: overload did not fail"; exit 1; }
  python3 - "$work/r.json" <<'PY' || exit 1
import json, sys
e = json.load(open(sys.argv[1]))["results"][0]
print(f"offered {e['offered_rps']:.0f}, arrived {e['arrival_rps']:.0f}, carried {e['carried_rps']:.0f} req/s; "
      f"p99 met {e['slo']['met']}; verdict {e['verdict']}")
assert e["offered_rps"] == 1e6, "the offered rate is the one asked for"
assert e["load_judged"] and e["overload"], "a rate far above capacity must be judged overload"
assert e["slo"]["judged"] and e["slo"]["met"], "the loose limit's percentile should be met, to show it does not save the run"
assert e["verdict"].startswith("overload"), e["verdict"]
print("PASS")
PY
  exit
fi
# The system searched: 2 ms of prefill compute a request (16 us x 128 tokens, serial on the
# prefill rank), so its capacity, about 490 req/s, is the schedule's and not how much of
# this shared host's cores the ranks get (which swings 2x in a minute here); the transfer
# itself carries 1,000-27,000 req/s of these requests on this host, busy or not. What is
# tested is the search: its capacity probe, its probes' length and judging, its bisection.
# Each search: a capacity probe, then 5 probes of a 0.5 s warm-up and a judged window of at
# least 3 s and 300 requests: about 25 s each here.
for i in 1 2 3; do
  start=$(date +%s)
  rb_mpirun_deadline 60 "$np" "$rb" kvcache --serve --find-max-rate "${geometry[@]}" --prefill-us-per-token 16 \
    --slo p99:1s \
    --probe-warmup 0.5 --probe-duration 3 --probe-requests 300 --seed "$i" --json "$work/r$i.json" \
    >"$work/out$i" 2>&1
  rc=$?
  grep -E "^# (capacity|find-max-rate|max rate|probe [0-9]+:|verdict)|^#  +[0-9]" "$work/out$i"
  echo "search $i: exit $rc after $(($(date +%s) - start)) s"
  ((rc == 0)) || { tail -30 "$work/out$i"; echo "FAIL: exit code $rc (124: the 60 s deadline)"; exit 1; }
done
python3 - "$work"/r1.json "$work"/r2.json "$work"/r3.json <<'PY' || exit 1
import json, statistics, sys
runs = [json.load(open(f)) for f in sys.argv[1:]]
rates, caps = [], []
for doc in runs:
    m = doc["max_rate"]
    rates.append(m["max_rate"])
    caps.append(m["capacity_rps"])
    assert 0 < m["max_rate"] <= m["capacity_rps"], f"max rate {m['max_rate']} vs capacity {m['capacity_rps']}"
    assert abs(m["capacity_share"] - m["max_rate"] / m["capacity_rps"]) < 1e-9
    assert 1 <= len(m["curve"]) <= 5, len(m["curve"])
    for p, e in zip(m["curve"], doc["results"]):
        assert p["requests"] >= 300, f"probe at {p['rate']:.0f} req/s judged only {p['requests']} requests"
        assert e["window_s"] >= 2.9 and e["warmup_requests"] > 0, e
        assert p["met"] == (p["why"] == ""), p
        assert p["rate"] < m["capacity_rps"]
print("max rates", [round(r) for r in rates], "capacities", [round(c) for c in caps])
med = statistics.median(rates)
spread = (max(rates) - min(rates)) / med
print(f"spread {100 * spread:.1f}% of the median {med:.0f} req/s")
assert spread <= 0.15, "three searches do not agree within 15% (max - min over the median)"
print("PASS")
PY

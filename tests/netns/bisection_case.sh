#!/usr/bin/env bash
# validate's bisection phase (tests.bisection) on the simulated SU, 4 nodes x 2 rails at
# 400 Mb/s: node01-02 against node03-04, every pair both ways at once on every rail.
#   1:1 spine: both cuts (same rail, and rail s -> s+1 through the spine) near line rate
#   2:1 spine: the same-rail cut still near line rate, the cross-rail cut about half
#              (each leaf's uplink carries four 400 Mb/s flows in 800 Mb/s), a FAIL
#              naming the cut and draining no node (a cut is the fabric's)
#   bisection_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_su_up rbtbis

# netns-4x2 with the bisection phase on.
sed 's/  "tests": {/  "tests": {\n    "bisection": true,/' "$here/../../configs/netns-4x2.json" >"$work/bisection.json"
grep '"bisection": true' "$work/bisection.json" >/dev/null || fail "could not enable tests.bisection in the config"

run_validate() {  # run_validate NAME: JSON to $work/NAME.json, exit code in $rc
  timeout --kill-after=10 240 "$su/mpirun.sh" -- "$rb" validate --config "$work/bisection.json" \
    --json "$work/$1.json" >"$work/out" 2>"$work/err"
  rc=$?
  grep -E '^# (phase 4b|  |verdict)|bisection' "$work/out"
  ((rc == 124 || rc == 137)) && fail "validate hung until the deadline"
  [[ -s $work/$1.json ]] || fail "no results file"
}

# fractions FILE: "cut rail fraction" per line
fractions() {
  python3 -c 'import json,sys
for c in json.load(open(sys.argv[1]))["bisection"]: print(c["cut"], c["rail"], round(c["fraction"], 3))' "$1"
}

# check_cuts OVERSUB: the fractions of the last run against what OVERSUB:1 should give;
# prints why and returns 1 when one is off.
check_cuts() {
  local oversub=$1 cut rail fraction
  fractions "$work/o$oversub.json" | tee "$work/f$oversub"
  [[ $(wc -l <"$work/f$oversub") == 4 ]] || fail "expected 4 cuts (2 rails x rail, cross-rail)"
  while read -r cut rail fraction; do
    if [[ $cut == rail || $oversub == 1 ]]; then
      awk -v f="$fraction" 'BEGIN { exit !(f >= 0.7) }' || {
        echo "at $oversub:1 the $cut cut of rail $rail carried only $fraction of its ideal"
        return 1
      }
    else
      awk -v f="$fraction" 'BEGIN { exit !(f >= 0.3 && f <= 0.65) }' || {
        echo "at 2:1 the cross-rail cut of rail $rail carried $fraction, not about half"
        return 1
      }
    fi
  done <"$work/f$oversub"
  if ((oversub == 1 && rc != 0)); then
    echo "at 1:1 validate exited $rc"
    return 1
  fi
}

for oversub in 1 2; do
  echo "== spine at $oversub:1"
  "$su/down.sh" >/dev/null
  "$su/up.sh" --nodes 4 --rails 2 --rate 400 --oversubscription $oversub >/dev/null || fail "up.sh failed"
  run_validate "o$oversub"
  if ! why=$(check_cuts $oversub); then
    # 8 ranks stream 16 flows at once on 2 cores: a cut measured while the host was busy
    # can come out low (one CI run: rail cuts 72% and 61% at 1:1, then 95% for the next
    # cut). Once more, as the compare tests do; a real bottleneck is low both times.
    echo "$why"
    echo "(off on the first attempt: measuring once more, in case the host was busy)"
    run_validate "o$oversub"
    why=$(check_cuts $oversub) || fail "$why"
  fi
  cat "$work/f$oversub"
done
((rc == 1)) || fail "the 2:1 run did not FAIL on its cross-rail cut (exit $rc)"
python3 - "$work/o2.json" "$work/o1.json" <<'PY' || fail "the findings"
import json, sys
two, one = (json.load(open(f)) for f in sys.argv[1:])
assert one["verdict"] == "PASS", one["findings"]
cuts = [f for f in two["findings"] if f["kind"] == "bisection"]
assert len(cuts) == 2 and all("cross-rail cut" in f["subject"] for f in cuts), two["findings"]
# Nothing else fails. A WARN may come with it: 16 flows at once on a 2-core host can make
# a healthy link unsteady (CI: node04 rail1 "intermittent", passed its re-test); a WARN
# drains no node, which the line below checks.
assert all(f["kind"] == "bisection" for f in two["findings"] if f["severity"] == "FAIL"), two["findings"]
assert two["bad_nodes"]["hosts"] == [], two["bad_nodes"]
PY
echo "PASS: bisection at 1:1 $(awk '{print $3}' "$work/f1" | paste -sd/), at 2:1 $(awk '{print $3}' "$work/f2" | paste -sd/)"

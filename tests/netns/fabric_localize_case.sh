#!/usr/bin/env bash
# validate's fabric phase on the simulated multi-spine fabric (2 SUs x 4 nodes x 2 rails x
# 4 spines), through scripts/netns-su/localize-eval.sh: one trial of each fault kind
# (healthy, a link degraded, lossy, down, blackholed, a withdrawn route, a host link, two
# links at once), seeded. Passes when at most one trial is not named exactly, no host is
# drained and the healthy trial finds nothing. RAILBENCH_LONG_TESTS=1: 40 trials, at most
# 2 not exact. Exit 77 without namespaces, nft or traceroute's kernel features.
#   fabric_localize_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_work
[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces)"
command -v nft >/dev/null || skip "no nft (apt-get install nftables): the lossy and blackholed links need it"
[[ -e /proc/sys/net/ipv4/fib_multipath_hash_seed ]] || skip "this kernel has no per-namespace ECMP hash seed"
trials=8 allowed=1
if [[ -n ${RAILBENCH_LONG_TESTS:-} ]]; then trials=40 allowed=2; fi
RB_SU_PREFIX=rbloc RAILBENCH_BIN=$rb timeout --kill-after=10 900 "$rb_root/scripts/netns-su/localize-eval.sh" \
  --trials $trials --seed "${RB_LOCALIZE_SEED:-3}" --json "$work/eval.json" >"$work/eval.log" 2>&1
status=$?
cat "$work/eval.log"
((status <= 1)) || fail "localize-eval.sh failed (exit $status)"
python3 - "$work/eval.json" "$allowed" <<'PY' || fail "the fabric phase named the wrong thing (table above)"
import json, sys
d = json.load(open(sys.argv[1]))
trials = d["trials"]
bad = [t for t in trials if t["score"] != "exact"]
drained = [t for t in trials if t["score"] == "drained"]
healthy_wrong = [t for t in trials if t["kind"] == "healthy" and t["score"] != "exact"]
print(f"{len(trials) - len(bad)} of {len(trials)} exact")
sys.exit(1 if drained or healthy_wrong or len(bad) > int(sys.argv[2]) else 0)
PY
echo "fabric localization: as expected"

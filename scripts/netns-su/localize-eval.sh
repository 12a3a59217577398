#!/usr/bin/env bash
# How well does validate's fabric phase name the link at fault? Measured, not claimed:
# on the simulated multi-spine fabric, each trial injects one fault at random (seeded),
# runs `railbench validate --fabric-only`, reads the results file and scores it.
#   localize-eval.sh [--trials N] [--seed S] [--kinds K1,K2,...] [--rate M] [--json FILE] [--keep DIR]
# --keep DIR: each trial's results file and log kept as DIR/trial-N-KIND.json and .log
# (`railbench compare` and `railbench report` read them).
# Kinds (taken in turn, so N >= 8 runs each at least once):
#   healthy    nothing injected: no finding may be made, no host drained
#   degrade    one fabric link at 10-30% of its rate
#   lossy      one fabric link dropping 1-5% of packets
#   down       one fabric link down (routing goes around it)
#   blackhole  one fabric link up, passing nothing
#   withdraw   one leaf's route via one spine withdrawn
#   host       one node's own link (NIC to leaf) at 20%: the host side, no fabric link blamed
#   double     two fabric links degraded at once, both to be named
# It brings up 2 SUs x 4 nodes x 2 rails x 4 spines at 100 Mb/s (configs/netns-2su-4x2-4spine.json,
# RB_SU_NET=10.150) under RB_SU_PREFIX (default rbev) and takes it down at the end;
# --rate M: every link at M Mb/s instead, and that config's rates with it.
# Prints one line per trial and a table per kind: exact link(s) named, a wrong link named,
# a host drained, nothing found. Exit 0 when every trial was scored exact, 1 otherwise.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export RB_SU_PREFIX=${RB_SU_PREFIX:-rbev}
export RB_SU_NET=10.150  # the config's fabric section names the fabric's addresses under it
source "$here/lib.sh"
set +e

trials=8 seed=1 kinds="healthy,degrade,lossy,down,blackhole,withdraw,host,double" json="" keep="" rate=100
while (($#)); do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --kinds) kinds=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
    *) rb_su_die "unknown option '$1': use --trials N --seed S --kinds K1,K2 --rate M --json FILE --keep DIR" ;;
  esac
done
[[ $trials =~ ^[0-9]+$ ]] && ((trials >= 1)) || rb_su_die "--trials $trials: a whole number, 1 or more"
[[ $seed =~ ^[0-9]+$ ]] || rb_su_die "--seed $seed: a whole number"
[[ $rate =~ ^[0-9]+$ ]] && ((rate >= 10 && rate <= 10000)) || rb_su_die "--rate $rate: Mb/s per link, 10..10000"
IFS=, read -ra kind_list <<<"$kinds"
for k in "${kind_list[@]}"; do
  [[ $k =~ ^(healthy|degrade|lossy|down|blackhole|withdraw|host|double)$ ]] ||
    rb_su_die "--kinds: '$k' is not a kind: use healthy, degrade, lossy, down, blackhole, withdraw, host, double"
done
if [[ -n $keep ]]; then
  mkdir -p "$keep" || rb_su_die "--keep $keep: cannot make that folder: give a writable path"
fi
rb_su_require_root
bin=${RAILBENCH_BIN:-$root/build/railbench}
[[ -x $bin ]] || rb_su_die "no railbench at $bin: build it (cmake --build build) or set RAILBENCH_BIN"
command -v python3 >/dev/null || rb_su_die "'python3' not found: apt-get install python3 (it reads the results files)"
config=$root/configs/netns-2su-4x2-4spine.json
# 100 Mb/s per node link (and so per leaf-spine link) by default: the rate the config
# expects, one this host carries through 5 namespaces without the flows falling short of it.
sus=2 nodes=4 rails=2 spines=4

work=$(mktemp -d /tmp/localize-eval.XXXXXX)
if ((rate != 100)); then
  # The config at that rate: its rails' line rate and the uplink (1:1, 4 nodes over 4 spines).
  sed -e "s/\"line_rate_gbps\": 0.1,/\"line_rate_gbps\": $(awk -v r="$rate" 'BEGIN { print r / 1000 }'),/" \
    -e "s/\"uplink_gbps\": 0.1,/\"uplink_gbps\": $(awk -v r="$rate" 'BEGIN { print r / 1000 }'),/" \
    "$config" >"$work/config.json"
  config=$work/config.json
fi
cleanup() { "$here/down.sh" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
[[ -f $RB_SU_STATE/su.env ]] && "$here/down.sh" >/dev/null 2>&1
"$here/up.sh" --sus $sus --nodes $nodes --rails $rails --spines $spines --rate $rate >"$work/up.log" 2>&1 ||
  { cat "$work/up.log" >&2; rb_su_die "the simulated fabric did not come up (above)"; }

# Draws from one generator in this shell (never in a $(...) subshell, which bash reseeds),
# so a seed gives the same faults every time.
RANDOM=$seed
pick() { picked=$((RANDOM % $1)); }  # pick N: sets picked to 0..N-1
random_link() {  # sets link
  local s r
  pick $sus; s=$((picked + 1))
  pick $rails; r=$picked
  pick $spines; link="su$s-leaf$r-spine$picked"
}

# score TRIAL KIND EXPECTED(space-separated links, "host:node03_rail1" or "") RESULTS: prints the verdict word.
score() {
  python3 - "$@" <<'PY'
import json, re, sys
trial, kind, expected, path = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"error no results ({e})"); sys.exit()
named = set()
for f in d.get("findings", []):
    if f.get("kind") == "fabric" and f.get("severity") == "FAIL":
        m = re.search(r"\(([^()]+)\)$", f.get("subject", ""))
        if m: named.add(m.group(1))
hosts = d.get("bad_nodes", {}).get("hosts", [])
want = {e for e in expected if not e.startswith("host:")}
host = [e[5:].replace("_", " ") for e in expected if e.startswith("host:")]
side = d.get("fabric", {}).get("host_side", [])
if hosts: word = "drained"
elif host and not named and host[0] not in side: word = "nothing"  # the host side not named
elif named - want: word = "wrong"
elif want and named == want: word = "exact"
elif want and named: word = "partial"
elif want: word = "nothing"
else: word = "exact"   # healthy, or a host fault with no fabric link blamed
print(word, ",".join(sorted(named)) or "-", ",".join(hosts) or "-")
PY
}

declare -A total=() exact=() wrong=() drained=() nothing=() partial=()
results=()
for ((t = 0; t < trials; t++)); do
  kind=${kind_list[t % ${#kind_list[@]}]}
  expected="" what=""
  case $kind in
    healthy) what="nothing" ;;
    degrade)
      random_link; pick 21; p=$((10 + picked)) l=$link
      "$here/fault.sh" degrade "$l" $p >/dev/null; expected=$l what="$l at $p%" ;;
    lossy)
      random_link; pick 5; p=$((1 + picked)) l=$link
      "$here/fault.sh" lossy "$l" $p >/dev/null; expected=$l what="$l drops $p%" ;;
    down) random_link; l=$link; "$here/fault.sh" down "$l" >/dev/null; expected=$l what="$l down" ;;
    blackhole) random_link; l=$link; "$here/fault.sh" blackhole "$l" >/dev/null; expected=$l what="$l blackholed" ;;
    withdraw)
      pick $sus; s=$((picked + 1))
      pick $rails; r=$picked
      pick $spines; k=$picked
      "$here/fault.sh" withdraw "su$s-leaf$r" "spine$k" >/dev/null
      expected="su$s-leaf$r-spine$k" what="su$s-leaf$r withdraws spine$k" ;;
    host)
      pick $((sus * nodes)); n=$((picked + 1))
      pick $rails; r=$picked
      "$here/fault.sh" degrade "$n" "$r" 20 >/dev/null
      expected="host:$(rb_su_node_name $n)_rail$r" what="$(rb_su_node_name $n) rail$r at 20%" ;;
    double)
      random_link; a=$link
      random_link; b=$link
      while [[ $b == "$a" ]]; do random_link; b=$link; done
      "$here/fault.sh" degrade "$a" 20 >/dev/null
      "$here/fault.sh" degrade "$b" 20 >/dev/null
      expected="$a $b" what="$a and $b at 20%" ;;
  esac
  out=$work/trial-$t.json
  timeout 300 "$here/mpirun.sh" -- "$bin" validate --config "$config" --fabric-only --json "$out" \
    >"$work/trial-$t.log" 2>&1
  read -r word named hosts < <(score "$t" "$kind" "$expected" "$out")
  if [[ -n $keep ]]; then
    cp "$work/trial-$t.log" "$keep/trial-$t-$kind.log"
    [[ -f $out ]] && cp "$out" "$keep/trial-$t-$kind.json"
  fi
  "$here/fault.sh" clear >/dev/null 2>&1
  printf 'trial %2d %-9s %-44s -> %-8s named %s, drained %s\n' "$t" "$kind" "$what" "$word" "$named" "$hosts"
  [[ $word == error ]] && tail -5 "$work/trial-$t.log" | sed 's/^/    /'
  total[$kind]=$((${total[$kind]:-0} + 1))
  case $word in
    exact) exact[$kind]=$((${exact[$kind]:-0} + 1)) ;;
    wrong) wrong[$kind]=$((${wrong[$kind]:-0} + 1)) ;;
    drained) drained[$kind]=$((${drained[$kind]:-0} + 1)) ;;
    partial) partial[$kind]=$((${partial[$kind]:-0} + 1)) ;;
    *) nothing[$kind]=$((${nothing[$kind]:-0} + 1)) ;;
  esac
  results+=("{\"trial\": $t, \"kind\": \"$kind\", \"fault\": \"$what\", \"score\": \"$word\", \"named\": \"$named\", \"drained\": \"$hosts\"}")
done

echo
printf '%-10s %6s %6s %8s %7s %8s %8s\n' kind trials exact partial wrong drained nothing
all_exact=0 all=0
for kind in "${kind_list[@]}"; do
  [[ -n ${total[$kind]:-} ]] || continue
  printf '%-10s %6d %6d %8d %7d %8d %8d\n' "$kind" "${total[$kind]}" "${exact[$kind]:-0}" "${partial[$kind]:-0}" \
    "${wrong[$kind]:-0}" "${drained[$kind]:-0}" "${nothing[$kind]:-0}"
  all_exact=$((all_exact + ${exact[$kind]:-0})) all=$((all + total[$kind]))
  total[$kind]=""  # a kind listed twice is printed once
done
echo "exact: $all_exact of $all trials (seed $seed)"
if [[ -n $json ]]; then
  (IFS=,; echo "{\"seed\": $seed, \"trials\": [${results[*]}]}") >"$json"
fi
((all_exact == all))

#!/usr/bin/env bash
# validate's flow probes (bench/commands/validate/fabric/flow_probe) on a small routed
# network of its own, with Debian's traceroute as the oracle:
#   A -- R1 =ECMP (L4 hash)=> {S1, S2} -- R2 -- B      (namespaces rbfp-*)
# - TCP and UDP traces of 8 source ports each equal `traceroute -T` / `traceroute -U` for
#   the same 5-tuple, hop for hop;
# - 16 source ports reach both S1 and S2 (the flow's own ports pick the path);
# - the traced connection carries a flow through R2 -> B shaped to 100 Mb/s, measured
#   within 20% of it by both ends;
# - with S1 blackholed, the ports hashed there get a trace cut after R1, the others
#   still reach B, and every trace ends within its budget;
# - a source or listen address that is not the host's own is refused, naming it.
# Usage: fabric_probe.sh DRIVER    (build/tests/railbench_fabric_probe_driver; root)
source "$(dirname "$0")/../support/case.sh"
drv=$(realpath "$1")
case_work

[[ $(id -u) -eq 0 ]] || skip "network namespaces need root"
command -v traceroute >/dev/null || fail "Debian's traceroute (the oracle) is not installed: scripts/install-deps.sh --for test installs it"

nets=(a r1 s1 s2 r2 b)
fp_down() {
  local n
  for n in "${nets[@]}"; do ip netns del "rbfp-$n" 2>/dev/null || true; done
}
fp_down
ip netns add rbfp-probe 2>/dev/null || skip "network namespaces cannot be made on this host"
ip netns del rbfp-probe
case_on_exit fp_down

in_ns() {
  local n=$1
  shift
  ip netns exec "rbfp-$n" "$@"
}

# link NS1 IF1 ADDR1 NS2 IF2 ADDR2: a veth pair, a /24 on each end.
link() {
  ip link add name "$2" netns "rbfp-$1" type veth peer name "$5" netns "rbfp-$4" || fail "cannot make veth $1:$2 -- $4:$5"
  ip -n "rbfp-$1" addr add "$3/24" dev "$2" && ip -n "rbfp-$1" link set dev "$2" up
  ip -n "rbfp-$4" addr add "$6/24" dev "$5" && ip -n "rbfp-$4" link set dev "$5" up
}

net=10.201
a=$net.1.2 b=$net.2.2 r1=$net.1.1
s1_hop=$net.11.2 s2_hop=$net.12.2 # S1's and S2's end of R1's uplinks: their time exceeded comes from there
topology_up() {
  local n
  for n in "${nets[@]}"; do
    ip netns add "rbfp-$n" || fail "cannot create namespace rbfp-$n"
    ip -n "rbfp-$n" link set lo up
    # Hosts too: B's port unreachable is what ends a UDP trace, one per probe.
    in_ns "$n" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
  done
  for n in r1 s1 s2 r2; do
    # A switch: forwards, hashes ECMP on the 5-tuple read from the headers (policy 3 with
    # the fields src/dst address, protocol, src/dst port = 0x37; policy 1 would reuse the
    # L4 hash a TCP packet brings across the veth, its socket's random txhash, so each
    # probe socket and every retransmission timeout could take another path), and answers
    # from the port the probe came in on.
    in_ns "$n" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=3 \
      net.ipv4.fib_multipath_hash_fields=0x0037 net.ipv4.icmp_errors_use_inbound_ifaddr=1 \
      net.ipv4.icmp_msgs_per_sec=10000 ||
      fail "rbfp-$n: cannot set the router's sysctls (fib_multipath_hash_policy 3 needs Linux 5.12)"
  done
  link a eth0 "$a" r1 a "$r1"
  link r1 s1 $net.11.1 s1 r1 "$s1_hop"
  link r1 s2 $net.12.1 s2 r1 "$s2_hop"
  link s1 r2 $net.21.1 r2 s1 $net.21.2
  link s2 r2 $net.22.1 r2 s2 $net.22.2
  link r2 b $net.2.1 b eth0 "$b"
  ip -n rbfp-a route add default via "$r1"
  ip -n rbfp-b route add default via $net.2.1
  ip -n rbfp-r1 route add $net.2.0/24 nexthop via "$s1_hop" dev s1 nexthop via "$s2_hop" dev s2
  ip -n rbfp-r1 route add $net.21.0/24 via "$s1_hop"
  ip -n rbfp-r1 route add $net.22.0/24 via "$s2_hop"
  ip -n rbfp-s1 route add $net.1.0/24 via $net.11.1
  ip -n rbfp-s1 route add $net.2.0/24 via $net.21.2
  ip -n rbfp-s2 route add $net.1.0/24 via $net.12.1
  ip -n rbfp-s2 route add $net.2.0/24 via $net.22.2
  ip -n rbfp-r2 route add $net.1.0/24 nexthop via $net.21.1 dev s1 nexthop via $net.22.1 dev s2
  ip -n rbfp-r2 route add $net.11.0/24 via $net.21.1
  ip -n rbfp-r2 route add $net.12.0/24 via $net.22.1
}
topology_up

# The port a backgrounded driver printed first ({"port": N}), within 5 s.
port_of() {
  local _
  for _ in $(seq 50); do
    if [[ -s $1 ]]; then
      python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["port"])' "$1" && return 0
    fi
    sleep 0.1
  done
  fail "no port line in ${1#"$work"/} within 5 s"
}

# The checks read the driver's JSON and traceroute's text; they print what failed.
cat >"$work/check.py" <<'EOF'
import json, re, sys

def oracle(path):
    """traceroute -n -q 1: one address (or '' for '*') per ttl, trailing silence dropped."""
    hops = [m.group(2) if m.group(2) != "*" else ""
            for m in (re.match(r"^\s*(\d+)\s+(\S+)", l) for l in open(path)) if m]
    while hops and not hops[-1]:
        hops.pop()
    return hops

def traces(path):
    return {t["src_port"]: t for t in json.load(open(path))["traces"]}

def addresses(t):
    return [h["address"] for h in t["hops"]]

cmd, args = sys.argv[1], sys.argv[2:]
bad = []
if cmd == "oracle":  # JSON DIR PORT...: each port's trace equals traceroute's, and reached
    got = traces(args[0])
    for p in args[2:]:
        want, t = oracle(f"{args[1]}/traceroute.{p}"), got[int(p)]
        if addresses(t) != want or not t["reached"]:
            bad.append(f"port {p}: traceroute {want}, driver {addresses(t)} reached={t['reached']} {t['error']}")
elif cmd == "spines":  # JSON S1 S2: hop 2 of the traces is S1 for some ports and S2 for others
    seen = {addresses(t)[1] for t in traces(args[0]).values() if len(t["hops"]) > 1}
    if seen != set(args[1:3]):
        bad.append(f"hop 2 of 16 ports: expected both {args[1:3]}, saw {sorted(seen)}")
elif cmd == "cut":  # HEALTHY CUT S1 R1 BUDGET_S: ports on S1 cut after R1, the others unchanged
    healthy, cut = traces(args[0]), traces(args[1])
    for p, h in healthy.items():
        t = cut[p]
        if addresses(h)[1] == args[2]:
            if t["reached"] or addresses(t) != [args[3]] or "cut after hop 1" not in t["error"]:
                bad.append(f"port {p} (on S1): expected a trace cut after {args[3]}, got {addresses(t)} {t['error']!r}")
        elif addresses(t) != addresses(h) or not t["reached"]:
            bad.append(f"port {p} (on S2): expected {addresses(h)}, got {addresses(t)} {t['error']!r}")
    if not any(addresses(h)[1] == args[2] for h in healthy.values()):
        bad.append("no port was hashed onto S1: nothing cut to check")
    took = json.load(open(args[1]))["seconds"]
    if took > float(args[4]):
        bad.append(f"the cut traces took {took:.1f} s, over their budget of {args[4]} s")
elif cmd == "flow":  # SEND RECV BYTES MBPS: both ends moved every byte, within 20% of MBPS
    send, recv = json.load(open(args[0])), json.load(open(args[1]))["flow"]
    for who, f in (("sender", send["flow"]), ("receiver", recv)):
        if not f["completed"] or f["bytes"] != int(args[2]):
            bad.append(f"{who}: not every byte moved: {f}")
        elif abs(f["gbps"] * 1000 / float(args[3]) - 1) > 0.2:
            bad.append(f"{who}: {f['gbps'] * 1000:.1f} Mb/s, not within 20% of {args[3]} Mb/s")
    if not send["trace"]["reached"]:
        bad.append(f"the flow's trace did not reach: {send['trace']}")
    print(f"flow: sender {send['flow']['gbps'] * 1000:.1f} Mb/s (rtt {send['flow']['rtt_us']} us, "
          f"{send['flow']['retransmits']} retransmits), receiver {recv['gbps'] * 1000:.1f} Mb/s")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF
check() { python3 "$work/check.py" "$@" >"$work/check.log" 2>&1 || fail "$(cat "$work/check.log")"; }

in_ns b "$drv" listen "$b" 60 >"$work/listen.out" 2>"$work/listen.err" &
case_started $!
dport=$(port_of "$work/listen.out")

# 1. TCP: 16 source ports at once; the first 8 against traceroute -T, the 16 over both spines.
ports=$(seq -s, 33001 33016)
with_deadline 20 in_ns a "$drv" trace tcp "$a" "$b" "$ports" "$dport" >"$work/tcp.json" 2>"$work/tcp.err" ||
  fail "trace tcp did not end cleanly"
mkdir "$work/tcp" "$work/udp"
for p in $(seq 33001 33008); do
  with_deadline 20 in_ns a traceroute -T -p "$dport" --sport="$p" -q 1 -n -m 6 -w 1 "$b" >"$work/tcp/traceroute.$p" 2>&1 ||
    fail "traceroute -T --sport $p failed: $(cat "$work/tcp/traceroute.$p")"
done
check oracle "$work/tcp.json" "$work/tcp" $(seq 33001 33008)
check spines "$work/tcp.json" "$s1_hop" "$s2_hop"
echo "tcp: 8 traces equal traceroute -T's; 16 ports reach both S1 and S2"

# 2. UDP (RoCE v2's destination port): 16 source ports, the first 8 against traceroute -U.
ports=$(seq -s, 35001 35016)
with_deadline 20 in_ns a "$drv" trace udp "$a" "$b" "$ports" 4791 >"$work/udp.json" 2>"$work/udp.err" ||
  fail "trace udp did not end cleanly"
for p in $(seq 35001 35008); do
  with_deadline 20 in_ns a traceroute -U -p 4791 --sport="$p" -q 1 -n -m 6 -w 1 "$b" >"$work/udp/traceroute.$p" 2>&1 ||
    fail "traceroute -U --sport $p failed: $(cat "$work/udp/traceroute.$p")"
done
check oracle "$work/udp.json" "$work/udp" $(seq 35001 35008)
echo "udp: 8 traces equal traceroute -U's"

# 3. The traced connection is the measured flow: 12.5 MB through R2 -> B at 100 Mb/s.
bytes=12500000
tc -n rbfp-r2 qdisc replace dev b root tbf rate 100mbit burst 32kb latency 20ms || fail "tc tbf on R2 -> B"
in_ns b "$drv" receive "$b" "$bytes" 15 >"$work/receive.out" 2>"$work/receive.err" &
case_started $!
rport=$(port_of "$work/receive.out")
with_deadline 20 in_ns a "$drv" send "$a" "$b" 34001 "$rport" "$bytes" 15 >"$work/send.out" 2>"$work/send.err" ||
  fail "send did not complete"
for _ in $(seq 50); do (($(wc -l <"$work/receive.out") >= 2)) && break; sleep 0.1; done
tail -n 1 "$work/receive.out" >"$work/receive.json"
check flow "$work/send.out" "$work/receive.json" "$bytes" 100
cat "$work/check.log"
tc -n rbfp-r2 qdisc del dev b root

# 4. S1 drops everything for B's subnet: the ports hashed there stop after R1, within
# max_ttl x tries x hop timeout (6 x 2 x 200 ms) and the pacing, never hanging.
ip -n rbfp-s1 route replace blackhole $net.2.0/24
ports=$(seq -s, 33001 33016)
with_deadline 20 in_ns a "$drv" trace tcp "$a" "$b" "$ports" "$dport" --max-ttl 6 --timeout-ms 200 --tries 2 \
  >"$work/tcp-cut.json" 2>"$work/tcp-cut.err"
rc=$?
((rc != 124)) || fail "trace tcp through a blackhole hung until the case's deadline"
((rc == 0)) || fail "trace tcp through a blackhole exited $rc"
check cut "$work/tcp.json" "$work/tcp-cut.json" "$s1_hop" "$r1" 5
ports=$(seq -s, 35001 35016)
with_deadline 20 in_ns a "$drv" trace udp "$a" "$b" "$ports" 4791 --max-ttl 6 --timeout-ms 200 --tries 2 \
  >"$work/udp-cut.json" 2>"$work/udp-cut.err" || fail "trace udp through a blackhole did not end cleanly"
check cut "$work/udp.json" "$work/udp-cut.json" "$s1_hop" "$r1" 5
echo "blackholed S1: the ports hashed there cut after R1, the others unchanged"

# 5. An address that is not the host's own: the listener refuses, the trace says so.
in_ns a "$drv" listen $net.9.9 5 >"$work/nonlocal.out" 2>"$work/nonlocal.err"
expect_eq "listen on a non-local address: exit code" 2 "$?"
expect_grep "^error: flow listener: cannot listen on $net\.9\.9: $net\.9\.9 is not an address of this host; give the rail's own IPv4 address" \
  "$work/nonlocal.err" "the listener's error line"
in_ns a "$drv" trace tcp $net.9.9 "$b" 33001 "$dport" >"$work/nonlocal.json" 2>&1
expect_grep "\"error\":\"cannot bind $net\.9\.9:33001: $net\.9\.9 is not an address of this host" \
  "$work/nonlocal.json" "the trace's error"
echo PASS

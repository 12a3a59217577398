#!/usr/bin/env bash
# The simulated multi-spine fabric (scripts/netns-su/up.sh --sus --spines) and its
# fabric-link faults (fault.sh), checked with real packets: traceroute (TCP and UDP,
# a fixed source port, so a fixed 5-tuple and ECMP path) as the oracle of each flow's
# path, and real TCP and UDP flows through links chosen by their source port.
#   fabric_sim.sh
# 2 SUs x 2 nodes x 2 rails under 4 spines (node01-02 in su1, node03-04 in su2):
#   paths      node01 -> node03 (rail0, across SUs): leaf SVI, a spine's end of the uplink,
#              the destination leaf's end of the downlink; 32 source ports cover all 4 spines
#   seeds      every switch hashes with its own seed; --polarized gives them one
#   down       the leaf stops using that spine, the other leaves stop using it towards that
#              leaf, and the flow that went through it still gets through
#   withdraw   asymmetric: that leaf avoids the spine, the far leaf still uses it
#   hash-l3    the leaf hashes addresses only: every source port takes one spine
#   blackhole  probes through it die after the leaf; the link stays in the routes
#   lossy      a UDP flow through it loses about the set fraction, one beside it nothing
#   degrade    a TCP flow through it runs at about the set fraction of the uplink
#   flap       routes follow the link down and up; clear stops it
# plus the config's fabric section against fabric-config.py, node-link faults in a fabric,
# and down.sh leaving nothing.
source "$(dirname "$0")/../support/case.sh"
case_su_up rbfs
command -v traceroute >/dev/null || skip "traceroute not found: apt-get install traceroute (scripts/install-deps.sh --for test)"
command -v nft >/dev/null || skip "nft not found: apt-get install nftables (scripts/install-deps.sh --for test)"
[[ -e /proc/sys/net/ipv4/fib_multipath_hash_seed ]] || skip "this kernel has no net.ipv4.fib_multipath_hash_seed (Linux 6.11+)"

# The checked-in config's fabric section is what fabric-config.py prints for its shape
# (but for its "tests", validate's settings for the fabric phase, and their comment).
sed -n '/^  "fabric": {$/,/^  }$/p' "$rb_root/configs/netns-2su-4x2-4spine.json" |
  sed '/(not from fabric-config.py)/,/"tests":/d' >"$work/config-fabric"
"$su/fabric-config.py" --sus 2 --nodes 4 --rails 2 --spines 4 --net 10.150 --rate 100 >"$work/printed-fabric" ||
  fail "fabric-config.py failed"
diff "$work/config-fabric" "$work/printed-fabric" >"$work/fabric-diff.log" ||
  fail "configs/netns-2su-4x2-4spine.json's fabric section differs from fabric-config.py's"

# Bad input: one error line, exit 2, nothing built.
out=$("$su/up.sh" --sus 9 --spines 2 2>&1)
rc=$?
((rc == 2)) && [[ $out == *"--sus 9: use 1..8"* ]] || fail "up.sh --sus 9: exit $rc, '$out'"
out=$("$su/up.sh" --spines 2 --tenants a=1-2,b=3-4 2>&1)
rc=$?
((rc == 2)) && [[ $out == *"--tenants and a fabric"* ]] || fail "up.sh --spines with --tenants: '$out'"
[[ ! -f $RB_SU_STATE/su.env ]] || fail "a refused up.sh left state behind"

"$su/up.sh" --sus 2 --nodes 2 --rails 2 --spines 4 >"$work/up.log" 2>&1 || fail "up.sh --sus 2 --spines 4 failed"
source "$su/lib.sh"
set +e  # lib.sh sets -e; this test checks each step itself
rb_su_load_state
fault="$su/fault.sh"
expect_eq "su.env: fabric, SUs, spines, nodes" "1 2 4 4 200" \
  "$RB_SU_FABRIC $RB_SU_SUS $RB_SU_SPINES $RB_SU_NODES $RB_SU_UPLINK"

# Seeds: each switch's sysctl is the recorded one, and no two are equal.
switch_seeds() {  # "name=seed" per switch, as the kernel holds them
  local s r k
  for s in 1 2; do for r in 0 1; do
    echo "su$s-leaf$r=$(ip netns exec "$(rb_su_fab_leaf_ns $s $r)" sysctl -n net.ipv4.fib_multipath_hash_seed)"
  done; done
  for k in 0 1 2 3; do echo "spine$k=$(ip netns exec "$(rb_su_fab_spine_ns $k)" sysctl -n net.ipv4.fib_multipath_hash_seed)"; done
}
expect_eq "the switches' seeds against su.env" "$RB_SU_SEEDS" "$(switch_seeds | paste -sd' ')"
expect_eq "distinct seeds" 8 "$(switch_seeds | cut -d= -f2 | sort -u | wc -l)"
"$su/fabric-config.py" --json >"$work/up-fabric.json" || fail "fabric-config.py for the fabric that is up failed"
expect_eq "the link su1-leaf0-spine2 in fabric-config.py's output" "$(rb_su_fab_leaf_addr 1 0 2) $(rb_su_fab_spine_addr 1 0 2)" \
  "$(python3 -c 'import json,sys; l=[l for l in json.load(open(sys.argv[1]))["fabric"]["links"] if l["name"]=="su1-leaf0-spine2"][0]; print(l["leaf_address"], l["spine_address"])' "$work/up-fabric.json")"

# trace SRC DST SPORT [-U]: the hop addresses from node SRC's rail0 to node DST's rail0
# ("*" for a silent hop), TCP to port 5001 (UDP to 5002 with -U) from source port SPORT.
trace() {
  local proto=-T port=5001 max=${TRACE_MAX:-5}
  [[ ${4:-} == -U ]] && proto=-U port=5002
  ip netns exec "$(rb_su_ns "$(rb_su_node_name "$1")")" timeout 20 traceroute -n $proto -p $port --sport="$3" \
    -s "$(rb_su_rail_ip "$1" 0)" -q 1 -w 1 -m "$max" "$(rb_su_rail_ip "$2" 0)" 2>>"$work/traceroute-err.log" |
    awk 'NR > 1 { printf "%s%s", sep, $2; sep = " " }'
}
# spine_of SRC "HOPS": the spine k whose link from SRC's rail-0 leaf hop 2 is, or "?".
spine_of() {
  local s k hop2
  s=$(rb_su_su_of "$1")
  read -r _ hop2 _ <<<"$2"
  for k in 0 1 2 3; do [[ $hop2 == "$(rb_su_fab_spine_addr "$s" 0 $k)" ]] && { echo $k; return; }; done
  echo "?"
}
# sweep SRC DST FILE: for 32 source ports, "port spine" lines into FILE; fails on a path
# that is not SVI, spine end, far leaf end, destination.
sweep() {
  local p hops k d s2
  : >"$3"
  for ((p = 40000; p < 40032; p++)); do
    hops=$(trace "$1" "$2" $p)
    k=$(spine_of "$1" "$hops")
    s2=$(rb_su_su_of "$2")
    d=$(rb_su_rail_ip "$2" 0)
    [[ $k != "?" && $hops == "$(rb_su_fab_rail_net "$(rb_su_su_of "$1")" 0).254 $(rb_su_fab_spine_addr "$(rb_su_su_of "$1")" 0 "$k") $(rb_su_fab_leaf_addr "$s2" 0 "$k") $d" ]] ||
      fail "node$1 -> node$2 sport $p: path '$hops' is not SVI, spine end, far leaf end, $d"
    echo "$p $k" >>"$3"
  done
}
spines_used() { cut -d' ' -f2 | sort -u | paste -sd' '; }

sweep 1 3 "$work/sweep-healthy"
expect_eq "spines taken by 32 source ports node01 -> node03 (healthy)" "0 1 2 3" "$(spines_used <"$work/sweep-healthy")"
declare -A via=()  # a TCP source port through each spine
while read -r p k; do [[ -n ${via[$k]:-} ]] || via[$k]=$p; done <"$work/sweep-healthy"
echo "healthy: 32 source ports over spines $(spines_used <"$work/sweep-healthy"); one through each: ${via[0]} ${via[1]} ${via[2]} ${via[3]}"

# One TCP flow of BYTES from node SRC rail0 port SPORT to node DST rail0 port 5001: Mb/s.
cat >"$work/flow.py" <<'PY'
import socket, struct, sys, time
role = sys.argv[1]
if role == "recv":
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((sys.argv[2], int(sys.argv[3]))); srv.listen(4); srv.settimeout(30)
    for _ in range(int(sys.argv[4])):
        conn, _ = srv.accept(); conn.settimeout(30)
        head = b""
        while len(head) < 8:
            head += conn.recv(8 - len(head))
        left = struct.unpack("!Q", head)[0]
        while left > 0:
            left -= len(conn.recv(min(left, 1 << 20)))
        conn.sendall(b"k")
        try:  # the sender ends the connection (a reset: neither end keeps a TIME_WAIT)
            conn.recv(1)
        except OSError:
            pass
        conn.close()
elif role == "send":
    src, sport, dst, nbytes = sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.settimeout(3)
    s.bind((src, sport))
    t0 = time.monotonic()
    s.connect((dst, 5001))
    s.settimeout(15)
    s.sendall(struct.pack("!Q", nbytes) + b"x" * nbytes)
    assert s.recv(1) == b"k"
    print(f"{nbytes * 8 / (time.monotonic() - t0) / 1e6:.1f}")
    # A reset, not a FIN: no TIME_WAIT holds the source port, which traceroute reuses.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); s.close()
elif role == "urecv":  # count datagrams until 1 s of silence after the first
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((sys.argv[2], 5002)); u.settimeout(10)
    n = 0
    try:
        while True:
            u.recv(2048); n += 1; u.settimeout(1)
    except socket.timeout:
        pass
    open(sys.argv[3], "w").write(f"{n}\n")
else:  # usend SRC SPORT DST COUNT: paced, so no queue on the way overflows
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((sys.argv[2], int(sys.argv[3])))
    for i in range(int(sys.argv[5])):
        u.sendto(b"d" * 200, (sys.argv[4], 5002))
        if i % 20 == 19:
            time.sleep(0.002)
PY
in_node() { local n=$1; shift; ip netns exec "$(rb_su_ns "$(rb_su_node_name "$n")")" "$@"; }
flow() {  # flow SRC DST SPORT BYTES: prints Mb/s, or nothing when the flow failed
  # The receiver's stdout is not the caller's $(...): a receiver still waiting for a flow
  # that never came would hold that open until its own 30 s accept deadline.
  in_node "$2" timeout 40 python3 "$work/flow.py" recv "$(rb_su_rail_ip "$2" 0)" 5001 1 >/dev/null 2>>"$work/flow-err.log" &
  local rpid=$!
  case_started $rpid
  sleep 0.3
  in_node "$1" timeout 30 python3 "$work/flow.py" send "$(rb_su_rail_ip "$1" 0)" "$3" "$(rb_su_rail_ip "$2" 0)" "$4" 2>>"$work/flow-err.log"
  kill "$rpid" 2>/dev/null
  wait "$rpid" 2>/dev/null
}
udp_received() {  # udp_received SRC DST SPORT COUNT: how many arrived
  rm -f "$work/udp-count"
  in_node "$2" timeout 30 python3 "$work/flow.py" urecv "$(rb_su_rail_ip "$2" 0)" "$work/udp-count" &
  local rpid=$!
  case_started $rpid
  sleep 0.3
  in_node "$1" timeout 30 python3 "$work/flow.py" usend "$(rb_su_rail_ip "$1" 0)" "$3" "$(rb_su_rail_ip "$2" 0)" "$4"
  wait "$rpid"
  cat "$work/udp-count" 2>/dev/null || echo 0
}

# down: su1-leaf0 avoids spine0, su2-leaf0 avoids it towards su1-leaf0, the flow that took
# it still gets through.
base=$(flow 1 3 "${via[1]}" 4000000)
[[ $base =~ ^[0-9.]+$ ]] || fail "no TCP flow node01 -> node03 through spine1 on the healthy fabric"
"$fault" down su1-leaf0-spine0 >/dev/null || fail "fault.sh down su1-leaf0-spine0 failed"
sweep 1 3 "$work/sweep-down"
sweep 3 1 "$work/sweep-down-back"
expect_eq "spines node01 -> node03 with su1-leaf0-spine0 down" "1 2 3" "$(spines_used <"$work/sweep-down")"
expect_eq "spines node03 -> node01 with su1-leaf0-spine0 down" "1 2 3" "$(spines_used <"$work/sweep-down-back")"
mbps=$(flow 1 3 "${via[0]}" 1000000)
[[ $mbps =~ ^[0-9.]+$ ]] || fail "the flow from source port ${via[0]} (spine0's) did not get through with spine0's link down"
echo "down su1-leaf0-spine0: both directions avoid spine0, the flow that took it runs at $mbps Mb/s"

# withdraw: asymmetric.
"$fault" withdraw su1-leaf0 spine1 >/dev/null || fail "fault.sh withdraw su1-leaf0 spine1 failed"
expect_eq "fault.sh list with a link down and a route withdrawn" 2 "$("$fault" list | grep -c '^su1-leaf0-spine[01]: ')"
"$fault" clear su1-leaf0-spine0 >/dev/null || fail "fault.sh clear su1-leaf0-spine0 failed"
sweep 1 3 "$work/sweep-withdrawn"
sweep 3 1 "$work/sweep-withdrawn-back"
expect_eq "spines node01 -> node03 with spine1 withdrawn from su1-leaf0" "0 2 3" "$(spines_used <"$work/sweep-withdrawn")"
[[ " $(spines_used <"$work/sweep-withdrawn-back") " == *" 1 "* ]] ||
  fail "node03 -> node01 no longer uses spine1 after su1-leaf0 withdrew from it (withdraw is one leaf's, asymmetric)"
"$fault" clear su1-leaf0 spine1 >/dev/null || fail "fault.sh clear su1-leaf0 spine1 failed"
echo "withdraw su1-leaf0 spine1: node01 -> node03 over spines $(spines_used <"$work/sweep-withdrawn"), back over $(spines_used <"$work/sweep-withdrawn-back")"

# hash-l3: su1-leaf0 hashes the addresses only, so all 32 source ports take one spine; the
# far leaf still hashes the ports on the way back; clear LEAF puts the ports back in.
"$fault" hash-l3 su1-leaf0 >/dev/null || fail "fault.sh hash-l3 su1-leaf0 failed"
"$fault" list >"$work/list-l3"
expect_grep '^su1-leaf0: hashes the addresses only' "$work/list-l3" "fault.sh list names the leaf that hashes addresses only"
sweep 1 3 "$work/sweep-l3"
sweep 3 1 "$work/sweep-l3-back"
expect_eq "spines taken by 32 source ports node01 -> node03 with su1-leaf0 hashing addresses only" 1 \
  "$(spines_used <"$work/sweep-l3" | wc -w)"
(($(spines_used <"$work/sweep-l3-back" | wc -w) > 1)) || fail "node03 -> node01 took one spine: su2-leaf0 still hashes the ports"
"$fault" clear su1-leaf0 >/dev/null || fail "fault.sh clear su1-leaf0 failed"
sweep 1 3 "$work/sweep-l4"
(($(spines_used <"$work/sweep-l4" | wc -w) > 1)) || fail "su1-leaf0 still sends every source port over one spine after clear"
echo "hash-l3 su1-leaf0: node01 -> node03 over spine $(spines_used <"$work/sweep-l3") only, back over $(spines_used <"$work/sweep-l3-back"); after clear over $(spines_used <"$work/sweep-l4")"

# blackhole: the probes through it die after the leaf; another spine's still pass it (their
# far hops may go silent: an answer coming back can hash onto the blackholed link).
"$fault" blackhole su1-leaf0-spine2 >/dev/null || fail "fault.sh blackhole su1-leaf0-spine2 failed"
hops=$(TRACE_MAX=3 trace 1 3 "${via[2]}")
expect_eq "trace through the blackholed link" "$(rb_su_fab_rail_net 1 0).254 * *" "$hops"
hops=$(TRACE_MAX=2 trace 1 3 "${via[3]}")
expect_eq "trace through spine3 beside the blackholed link" "$(rb_su_fab_rail_net 1 0).254 $(rb_su_fab_spine_addr 1 0 3)" "$hops"
mbps=$(flow 1 3 "${via[2]}" 100000)
[[ -z $mbps ]] || fail "a TCP flow through the blackholed link got through ($mbps Mb/s)"
"$fault" clear su1-leaf0-spine2 >/dev/null || fail "fault.sh clear su1-leaf0-spine2 failed"
echo "blackhole su1-leaf0-spine2: its probes stop after the leaf, its flow fails, spine3's pass"

# lossy: a UDP flow through it loses about 20%, one through another spine about nothing.
declare -A uvia=()
for ((p = 41000; p < 41064; p++)); do
  k=$(spine_of 1 "$(trace 1 3 $p -U)")
  [[ -n ${uvia[$k]:-} ]] || uvia[$k]=$p
  [[ -n ${uvia[3]:-} && -n ${uvia[0]:-} ]] && break
done
[[ -n ${uvia[3]:-} && -n ${uvia[0]:-} ]] || fail "64 UDP source ports found no path through spine3 and spine0"
"$fault" lossy su1-leaf0-spine3 20 >/dev/null || fail "fault.sh lossy su1-leaf0-spine3 20 failed"
got=$(udp_received 1 3 "${uvia[3]}" 2000)
other=$(udp_received 1 3 "${uvia[0]}" 2000)
((got >= 1500 && got <= 1700)) || fail "2000 datagrams through the 20% lossy link: $got arrived (1500..1700 expected)"
((other >= 1980)) || fail "2000 datagrams through spine0 beside the lossy link: only $other arrived"
"$fault" clear su1-leaf0-spine3 >/dev/null || fail "fault.sh clear su1-leaf0-spine3 failed"
echo "lossy su1-leaf0-spine3 20: $got of 2000 datagrams through it arrived, $other of 2000 through spine0"

# degrade: a TCP flow through it at about 25% of the uplink (50 Mb/s).
"$fault" degrade su1-leaf0-spine1 25 >/dev/null || fail "fault.sh degrade su1-leaf0-spine1 25 failed"
slow=$(flow 1 3 "${via[1]}" 3000000)
[[ $slow =~ ^[0-9.]+$ ]] || fail "no TCP flow through the degraded link"
awk -v s="$slow" -v b="$base" 'BEGIN { exit !(s < 0.5 * b && s > 25 && s < 60) }' ||
  fail "the flow through the link degraded to 25% of 200 Mb/s ran at $slow Mb/s (healthy $base): expected 25..60 and under half"
echo "degrade su1-leaf0-spine1 25: one TCP flow through it $slow Mb/s, healthy $base Mb/s"

# flap: routes follow; clear stops the loop and leaves the link up.
"$fault" flap su1-leaf1-spine0 0.5 >/dev/null || fail "fault.sh flap su1-leaf1-spine0 0.5 failed"
seen=""
for _ in $(seq 16); do
  seen+=$(ip -n "$(rb_su_fab_leaf_ns 1 1)" route show "$(rb_su_fab_rail_net 2 1).0/24" | grep -c nexthop)
  sleep 0.25
done
[[ $seen == *3* && $seen == *4* ]] || fail "su1-leaf1's route to su2-leaf1 did not follow the flapping link (nexthops seen: $seen)"
"$fault" degrade node01 rail0 50 >/dev/null || fail "fault.sh degrade node01 rail0 50 (a node link in a fabric) failed"
tc -n "$(rb_su_fab_leaf_ns 1 0)" class show dev n01 | grep "rate 200Mbit" >/dev/null || fail "node01's port n01 in su1-leaf0 is not at 200 Mb/s"
"$fault" down node04 rail1 >/dev/null || fail "fault.sh down node04 rail1 failed"
ip -n "$(rb_su_fab_leaf_ns 2 1)" link show n04 | grep "state DOWN" >/dev/null || fail "node04's port n04 in su2-leaf1 is not down"
out=$("$fault" swap node01 rail0 rail1 2>&1)
(($? == 2)) && [[ $out == *"not modelled in a fabric"* ]] || fail "fault.sh swap in a fabric: '$out'"
"$fault" clear >/dev/null || fail "fault.sh clear failed"
expect_eq "fault.sh list after clear" "no faults: every node link at 400 Mb/s, every fabric link at 200 Mb/s" "$("$fault" list)"
ls "$RB_SU_STATE"/fflap-*.pid >/dev/null 2>&1 && fail "a flap loop's pid file is left after clear"
ip -n "$(rb_su_fab_leaf_ns 1 1)" link show spine0 | grep "state UP" >/dev/null || fail "su1-leaf1's link to spine0 is not up after clear"
for ns in $(ip netns list | awk '{print $1}' | grep -E "^$RB_SU_PREFIX-(s[0-9]+l|sp)"); do
  [[ -z $(ip netns exec "$ns" nft list tables) ]] || fail "nft tables left in $ns after clear"
done
sweep 1 3 "$work/sweep-cleared"
expect_eq "spines after clear" "0 1 2 3" "$(spines_used <"$work/sweep-cleared")"
echo "flap, node-link faults in a fabric, clear: routes followed ($seen), all mended"

# --polarized: one seed for every switch.
"$su/down.sh" >/dev/null || fail "down.sh failed"
"$su/up.sh" --sus 2 --nodes 1 --rails 1 --spines 2 --polarized >"$work/up-polarized.log" 2>&1 || fail "up.sh --polarized failed"
rb_su_load_state
n=$(for ns in $(ip netns list | awk '{print $1}' | grep -E "^$RB_SU_PREFIX-(s[0-9]+l|sp)"); do
  ip netns exec "$ns" sysctl -n net.ipv4.fib_multipath_hash_seed
done | sort | uniq -c)
[[ $(wc -l <<<"$n") == 1 && $n == *" 4 "* && $RB_SU_POLARIZED == 1 ]] || fail "--polarized: switch seeds $n (one seed on 4 switches expected)"
echo "polarized: one seed on all 4 switches"

"$su/down.sh" >/dev/null || fail "down.sh failed"
left=$( (ip netns list | grep "^$RB_SU_PREFIX-"; ip -o link show | grep ": $RB_SU_PREFIX-") | wc -l)
expect_eq "namespaces and links left after down.sh" 0 "$left"
[[ ! -d $RB_SU_STATE ]] || fail "down.sh left $RB_SU_STATE"
echo PASS

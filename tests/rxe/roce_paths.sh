#!/usr/bin/env bash
# RoCE v2 queue pairs' own paths through a routed leaf-spine fabric, run INSIDE the rxe
# VM (scripts/rxe-vm/run.sh):
#   roce_paths.sh RAILBENCH
# Two leaves and two spines are network namespaces that route with Linux ECMP on the
# 5-tuple, as a switch hashes it (policy 3, fields 0x37: policy 1 would take the L4 hash
# a packet brings across the veth, its socket's random one), and answer ICMP from the
# port the probe came in on, as a switch does. Soft-RoCE exists only in the VM's first
# namespace on its kernel, so both NICs live there, on veths to their leaves, and policy
# routing sends A's traffic for B out through the fabric instead of across the host
# (the "cable looped back through a switch" set-up). railbench sendrecv -t verbs with 8
# queue pairs a peer runs with --paths 1; nftables on each spine counts the RoCE bytes
# per UDP source port. Checked:
#  - every queue pair was traced, leaf > spine > leaf, and both spines were seen;
#  - each queue pair's packets crossed the spine its trace named and no other (so the
#    source port railbench reports is the one rxe puts on the wire, and the probes took
#    the queue pair's path);
#  - traceroute (-U, the same ports) agrees on the spine for a few of them.
# (--paths over a transport that knows no flows is refused by name: the options walk.)
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_work
ns() { ip netns exec "$@"; }

fabric_down() {
  rdma link del rxeA 2>/dev/null
  rdma link del rxeB 2>/dev/null
  ip link del hA 2>/dev/null
  ip link del hB 2>/dev/null
  for n in leaf0 leaf1 spine0 spine1; do ip netns del "$n" 2>/dev/null; done
}
case_on_exit fabric_down

# veth NAME_A in NS_A (ADDR_A) <-> NAME_B in NS_B (ADDR_B)
wire() {
  ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" &&
    ns "$1" ip addr add "$5" dev "$2" && ns "$3" ip addr add "$6" dev "$4" &&
    ns "$1" ip link set "$2" up && ns "$3" ip link set "$4" up
}

fabric_up() {
  local n i
  for n in leaf0 leaf1 spine0 spine1; do
    ip netns add "$n" && ns "$n" ip link set lo up &&
      ns "$n" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=3 \
        net.ipv4.fib_multipath_hash_fields=0x0037 net.ipv4.icmp_errors_use_inbound_ifaddr=1 \
        net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 net.ipv4.icmp_ratelimit=0 || return 1
  done
  # The two hosts' NICs, in this namespace: A behind leaf0, B behind leaf1.
  ip link add hA type veth peer name l0h netns leaf0 && ip addr add 10.1.0.2/24 dev hA && ip link set hA up &&
    ns leaf0 ip addr add 10.1.0.1/24 dev l0h && ns leaf0 ip link set l0h up || return 1
  ip link add hB type veth peer name l1h netns leaf1 && ip addr add 10.2.0.2/24 dev hB && ip link set hB up &&
    ns leaf1 ip addr add 10.2.0.1/24 dev l1h && ns leaf1 ip link set l1h up || return 1
  wire leaf0 l0s0 spine0 s0l0 10.10.0.1/30 10.10.0.2/30 && wire leaf0 l0s1 spine1 s1l0 10.11.0.1/30 10.11.0.2/30 &&
    wire leaf1 l1s0 spine0 s0l1 10.20.0.1/30 10.20.0.2/30 && wire leaf1 l1s1 spine1 s1l1 10.21.0.1/30 10.21.0.2/30 ||
    return 1
  ns leaf0 ip route add 10.2.0.0/24 nexthop via 10.10.0.2 nexthop via 10.11.0.2 &&
    ns leaf1 ip route add 10.1.0.0/24 nexthop via 10.20.0.2 nexthop via 10.21.0.2 &&
    ns spine0 ip route add 10.1.0.0/24 via 10.10.0.1 && ns spine0 ip route add 10.2.0.0/24 via 10.20.0.1 &&
    ns spine1 ip route add 10.1.0.0/24 via 10.11.0.1 && ns spine1 ip route add 10.2.0.0/24 via 10.21.0.1 || return 1
  # A's packets for B leave through hA (and B's for A through hB) instead of the local
  # table's shortcut; each arrives on the other veth from an address of this host.
  for i in all default hA hB; do sysctl -qw "net.ipv4.conf.$i.rp_filter=0" "net.ipv4.conf.$i.accept_local=1"; done
  ip rule add pref 100 from 10.1.0.2 to 10.2.0.2 iif lo lookup 100 &&
    ip rule add pref 101 from 10.2.0.2 to 10.1.0.2 iif lo lookup 101 &&
    ip rule add pref 1000 lookup local && ip rule del pref 0 &&
    ip route add 10.2.0.0/24 via 10.1.0.1 dev hA table 100 &&
    ip route add 10.1.0.0/24 via 10.2.0.1 dev hB table 101 || return 1
  rdma link add rxeA type rxe netdev hA && rdma link add rxeB type rxe netdev hB || return 1
  # Per spine: A's RoCE packets forwarded, counted per UDP source port.
  for n in spine0 spine1; do
    ns "$n" nft -f - <<'NFT' || return 1
table ip rb {
  set sports { type inet_service; flags dynamic; counter; }
  chain count {
    type filter hook forward priority 0; policy accept;
    ip saddr 10.1.0.2 udp dport 4791 add @sports { udp sport }
  }
}
NFT
  done
}

fabric_up || fail "could not build the 2-leaf, 2-spine fabric"

# One rank a NIC: rank 0 on rxeA, rank 1 on rxeB.
cat >"$work/rank.sh" <<RANK
#!/bin/sh
[ "\$OMPI_COMM_WORLD_RANK" = 0 ] && nic=rxeA || nic=rxeB
exec "$rb" sendrecv -t verbs --rails \$nic --qps-per-peer 8 --paths 1 -b 64K -e 64K -n 40 -w 2 --window 8 \
  --bw-iters 2 -c --json "$work/r.json"
RANK
chmod +x "$work/rank.sh"
rb_mpirun_deadline 240 2 "$work/rank.sh" >"$work/out" 2>"$work/err" ||
  { cat "$work/out" "$work/err"; fail "sendrecv -t verbs --paths 1 across the fabric failed"; }
grep '^# paths\|^#   rank\|^#   at' "$work/out"
# The ECMP balance line of each leaf: its 16 queue pairs over both spines.
for leaf in 10.1.0.1 10.2.0.1; do
  grep -q "^#   at $leaf: 16 flow(s) over 2 next switch(es): " "$work/out" ||
    fail "no balance line for the queue pairs leaving $leaf over both spines"
done
for n in spine0 spine1; do ns "$n" nft -j list set ip rb sports >"$work/$n.json" || fail "no counters from $n"; done

# The verdict, with traceroute's view of three of rank 0's queue pairs (the oracle for
# the spine) taken by the checker itself: one Python start, which costs seconds here.
python3 "$here/roce_paths_check.py" "$work" || fail "the traced paths do not match where the queue pairs' packets went"
echo "ok: RoCE v2 paths"

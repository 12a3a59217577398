# Sourced by up.sh in fabric mode (--sus S and/or --spines K): checks the options, then
# builds S SUs of $nodes nodes, an L3 leaf namespace per SU and rail, K spine namespaces
# and a shaped veth per leaf-spine link, and converges the routes (lib.sh names them all).
# Reads up.sh's variables: nodes rails rate mtu oversub tenants sus spines polarized.
set -E  # the ERR trap (tear down) also for failures inside functions
sus=${sus:-1} spines=${spines:-1}
[[ $sus =~ ^[0-9]+$ ]] && ((sus >= 1 && sus <= 8)) || rb_su_die "--sus $sus: use 1..8"
[[ $spines =~ ^[0-9]+$ ]] && ((spines >= 1 && spines <= 63)) || rb_su_die "--spines $spines: use 1..63"
[[ $nodes =~ ^[0-9]+$ ]] && ((nodes >= 1)) || rb_su_die "--nodes $nodes: the nodes of each SU, 1 or more"
((sus * nodes >= 2 && sus * nodes <= 99)) ||
  rb_su_die "--sus $sus x --nodes $nodes makes $((sus * nodes)) nodes: use 2..99 in all (node names have 2 digits)"
[[ $rails =~ ^[0-9]+$ ]] && ((rails >= 1 && rails <= 8)) || rb_su_die "--rails $rails: use 1..8"
[[ $rate =~ ^[0-9]+$ ]] && ((rate >= 1)) || rb_su_die "--rate $rate: a whole number of Mb/s, e.g. 400"
[[ $mtu =~ ^[0-9]+$ ]] && ((mtu >= 576 && mtu <= 9000)) || rb_su_die "--mtu $mtu: use 576..9000"
[[ $oversub =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v f="$oversub" 'BEGIN { exit !(f >= 1 && f <= 64) }' ||
  rb_su_die "--oversubscription $oversub: a ratio of downlink to uplink capacity, 1..64 (1: non-blocking, 2: 2:1)"
[[ -z $tenants ]] || rb_su_die "--tenants and a fabric (--sus/--spines) do not go together: leave one out"
# Each leaf-spine link: the leaf's downlink capacity over F, spread over the K spines.
uplink=$(awk -v n="$nodes" -v r="$rate" -v f="$oversub" -v k="$spines" 'BEGIN { u = int(n * r / f / k); print (u < 1 ? 1 : u) }')
rb_su_require_root
[[ -e /proc/sys/net/ipv4/fib_multipath_hash_seed ]] ||
  rb_su_die "this kernel has no net.ipv4.fib_multipath_hash_seed (Linux 6.11 and later have it): a fabric needs a hash seed per switch; run without --sus/--spines for the one-spine SU"
command -v flock >/dev/null || rb_su_die "'flock' not found: apt-get install util-linux"
[[ -f $RB_SU_STATE/su.env ]] && rb_su_die "a simulated SU is already up ($RB_SU_STATE): run scripts/netns-su/down.sh first"
rb_su_take_net

# A hash seed per switch (32 bits, never 0: 0 means "the kernel's own random seed", which
# nobody could record); --polarized gives them all the first one.
rb_su_fab_seed() { echo $(($(od -An -N4 -tu4 /dev/urandom) % 4294967295 + 1)); }
declare -A seed=()
first_seed=$(rb_su_fab_seed)
seeds=""
for ((s = 1; s <= sus; s++)); do
  for ((r = 0; r < rails; r++)); do
    seed[s${s}l$r]=$first_seed
    ((polarized)) || seed[s${s}l$r]=$(rb_su_fab_seed)
    seeds+="${seeds:+ }su$s-leaf$r=${seed[s${s}l$r]}"
  done
done
for ((k = 0; k < spines; k++)); do
  seed[sp$k]=$first_seed
  ((polarized)) || seed[sp$k]=$(rb_su_fab_seed)
  seeds+=" spine$k=${seed[sp$k]}"
done

trap 'echo "netns-su: setup failed, tearing down" >&2; "$here/down.sh" >/dev/null 2>&1 || true' ERR
mkdir -p "$RB_SU_STATE"
cat >"$RB_SU_STATE/su.env" <<STATE
RB_SU_NODES=$((sus * nodes))
RB_SU_RAILS=$rails
RB_SU_RATE=$rate
RB_SU_MTU=$mtu
RB_SU_OVERSUB=$oversub
RB_SU_UPLINK=$uplink
RB_SU_NET=$RB_SU_NET
RB_SU_TENANTS=
RB_SU_FABRIC=1
RB_SU_SUS=$sus
RB_SU_SU_NODES=$nodes
RB_SU_SPINES=$spines
RB_SU_POLARIZED=$polarized
RB_SU_SEEDS="$seeds"
STATE
rb_su_load_state
: >"$RB_SU_STATE/withdrawn"

# A switch: forwards, hashes the 5-tuple with its seed, and answers ICMP as a switch does:
# from the interface the probe came in on (so a traceroute's hop names the link it took),
# with a policer generous enough for path discovery. The hash is policy 3 with the fields
# source and destination address, protocol, source and destination port (0x37), not
# policy 1: policy 1 takes a packet's socket hash when it carries one, and a TCP
# socket's packets keep theirs (random per connection) across the veth into the leaf,
# so every connection would take a random spine whatever its ports, unlike a switch.
make_switch() {  # make_switch NS SEED
  ip netns add "$1"
  ip -n "$1" link set lo up
  ip netns exec "$1" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
    net.ipv4.conf.default.rp_filter=0 net.ipv4.fib_multipath_hash_policy=3 \
    net.ipv4.fib_multipath_hash_fields=0x0037 "net.ipv4.fib_multipath_hash_seed=$2" net.ipv4.icmp_errors_use_inbound_ifaddr=1 \
    net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_msgs_per_sec=1000 net.ipv4.icmp_msgs_burst=200 >/dev/null
}

for ((k = 0; k < spines; k++)); do make_switch "$(rb_su_fab_spine_ns $k)" "${seed[sp$k]}"; done
for ((s = 1; s <= sus; s++)); do
  for ((r = 0; r < rails; r++)); do
    leaf=$(rb_su_fab_leaf_ns $s $r)
    make_switch "$leaf" "${seed[s${s}l$r]}"
    ip -n "$leaf" link add br0 type bridge
    ip -n "$leaf" link set br0 mtu "$mtu" up
    ip -n "$leaf" addr add "$(rb_su_fab_rail_net $s $r).254/24" dev br0
    for ((k = 0; k < spines; k++)); do
      spine=$(rb_su_fab_spine_ns $k)
      ip -n "$leaf" link add "spine$k" type veth peer name "s${s}l$r" netns "$spine"
      ip -n "$leaf" addr add "$(rb_su_fab_leaf_addr $s $r $k)/30" dev "spine$k"
      ip -n "$spine" addr add "$(rb_su_fab_spine_addr $s $r $k)/30" dev "s${s}l$r"
      ip -n "$leaf" link set "spine$k" mtu "$mtu" up
      ip -n "$spine" link set "s${s}l$r" mtu "$mtu" up
      rb_su_shape "$leaf" "spine$k" "$uplink"    # leaf -> spine
      rb_su_shape "$spine" "s${s}l$r" "$uplink"  # spine -> leaf
    done
  done
done

mgmt=$(rb_su_mgmt_bridge)
ip link add "$mgmt" type bridge
ip addr add "$RB_SU_MGMT_NET.254/24" dev "$mgmt"
ip link set "$mgmt" up
for ((n = 1; n <= RB_SU_NODES; n++)); do
  node=$(rb_su_node_name $n)
  ns=$(rb_su_ns "$node")
  s=$(rb_su_su_of $n)
  rb_su_add_node "$n" "$mgmt"
  for ((r = 0; r < rails; r++)); do
    leaf=$(rb_su_fab_leaf_ns "$s" $r)
    port=$(rb_su_port_dev $n $r)
    ip -n "$leaf" link add "$port" type veth peer name "rail$r" netns "$ns"
    ip -n "$leaf" link set "$port" master br0 mtu "$mtu" up
    ip -n "$ns" link set "rail$r" mtu "$mtu"
    sysctl_ns "$ns" "net.ipv4.conf.rail$r.rp_filter=0"
    ip -n "$ns" addr add "$(rb_su_rail_ip $n $r)/24" dev "rail$r"
    ip -n "$ns" link set "rail$r" up
    # One wire-sized packet per segment, as a NIC puts on the cable: veth otherwise hands
    # 64 KiB GSO bursts through the whole fabric, and a lossy link's "P% of packets"
    # would drop a few bursts instead of P% of the segments.
    ip -n "$ns" link set "rail$r" gso_max_segs 1
    # Traffic from railR's address leaves through railR; every other rail subnet, of
    # every SU, through the node's own leaf (its SVI).
    table=$((100 + r))
    net=$(rb_su_fab_rail_net "$s" $r)
    batch="route add $net.0/24 dev rail$r src $(rb_su_rail_ip $n $r) table $table"$'\n'
    for ((s2 = 1; s2 <= sus; s2++)); do
      for ((o = 0; o < rails; o++)); do
        ((s2 == s && o == r)) && continue
        batch+="route add $(rb_su_fab_rail_net $s2 $o).0/24 via $net.254 dev rail$r table $table"$'\n'
      done
    done
    batch+="rule add from $(rb_su_rail_ip $n $r) table $table priority $table"$'\n'
    # The same rail of the other SUs is reached through this rail from any source, so a
    # socket that binds no address (ping, traceroute without -s) finds it too.
    for ((s2 = 1; s2 <= sus; s2++)); do
      ((s2 == s)) && continue
      batch+="route add $(rb_su_fab_rail_net $s2 $r).0/24 via $net.254 dev rail$r src $(rb_su_rail_ip $n $r)"$'\n'
    done
    ip -n "$ns" -batch - <<<"$batch"
    rb_su_shape "$ns" "rail$r" "$rate"
    rb_su_shape "$leaf" "$port" "$rate"
  done
done
rb_su_fab_routes
trap - ERR
seed_note="a hash seed per switch"
((polarized)) && seed_note="one hash seed for every switch (polarized)"
echo "netns-su: up: fabric of $sus SUs x $nodes nodes x $rails rails at $rate Mb/s per link, MTU $mtu," \
  "$spines spines, leaf-spine links $uplink Mb/s ($oversub:1), $seed_note" \
  "(nodes $(rb_su_node_name 1)..$(rb_su_node_name "$RB_SU_NODES"), leaves su1-leaf0..su$sus-leaf$((rails - 1)), management $RB_SU_MGMT_NET.0/24)"

#!/usr/bin/env bash
# Breaks one link of the simulated SU (the cable between a node's NIC and its leaf),
# the way links break in real SUs, or mends it:
#   fault.sh degrade NODE RAIL PERCENT   carry only PERCENT of the SU's rate, both directions
#   fault.sh delay NODE RAIL MS          add MS milliseconds each way (needs sch_netem)
#   fault.sh lossy NODE RAIL MASK        a lossy cable: drops the IPv4 data packets (1 KiB and up)
#                                        whose ID has the bits MASK (hex, 0x7: 1 in 8) all zero,
#                                        both ways; the node sees its own egress drops (qdisc/drops)
#   fault.sh down NODE RAIL              switch port down: the NIC sees no carrier
#   fault.sh blackhole NODE RAIL         port unplugged from the leaf: link up, nothing passes
#   fault.sh flap NODE RAIL PERIOD_S     a loose cable: port down for PERIOD_S, up for PERIOD_S, ...
#                                        (a background loop, until clear or down.sh)
#   fault.sh swap NODE RAILa RAILb       two cables swapped: the node's RAILa port into RAILb's leaf and
#                                        RAILb's into RAILa's (links up; clearing either mends both)
#   fault.sh miscable NODE RAIL LEAFRAIL one cable on the wrong leaf: the node's RAIL port into LEAFRAIL's
#                                        leaf (link up), as a cable plugged into the next switch
#   fault.sh breach NODE RAIL TENANT     (an SU built with --tenants) the port in TENANT's network, as a
#                                        switch port in the wrong VLAN or partition: link up
#   fault.sh clear [NODE RAIL]           mend one link, or every link
#   fault.sh list                        the faults in place
# NODE: node02 or 2; RAIL: rail1 or 1.
# In a fabric (up.sh --sus/--spines) the same node-link faults (but swap, miscable and
# breach), and faults of the leaf-spine links, LINK named as the config names it
# (su1-leaf0-spine2); every change of a link's state converges the routes at once:
#   fault.sh degrade LINK PERCENT        carry only PERCENT of the uplink rate, both directions
#   fault.sh down LINK                   both ends down (no carrier): routes avoid the link
#   fault.sh lossy LINK PERCENT          drop PERCENT (1..50, decimals allowed) of all packets at
#                                        random, both directions (nftables numgen)
#   fault.sh withdraw LEAF SPINE         that leaf stops routing over that spine (su1-leaf0 spine2);
#                                        the others still send to it through the spine
#   fault.sh blackhole LINK              link up and routed over, nothing passes either way
#   fault.sh flap LINK PERIOD_S          down PERIOD_S, up PERIOD_S, ... (routes follow), until clear
#   fault.sh hash-l3 LEAF                the leaf's ECMP hashes the addresses only, not the ports (a
#                                        switch with L3 hashing): every flow between two NICs takes
#                                        one spine, however many connections or QPs
#   fault.sh clear LINK | clear LEAF SPINE | clear LEAF   mend one fabric link or leaf (clear alone
#                                        mends everything)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rb_su_require_root
rb_su_load_state
faults="$RB_SU_STATE/faults"
touch "$faults"

usage() { sed -n '2,37p' "$0" >&2; exit 2; }

# The loop that flaps a link: sleeps in a child it can end at once, so a stopped loop
# leaves nothing behind, and ends by itself when its pid file goes (down.sh).
flap_loop() {  # flap_loop PORT PERIOD_S PIDFILE [NETNS of the port]
  local port=$1 period=$2 pidfile=$3 pns=${4:-} child=""
  trap '[[ -n $child ]] && kill "$child" 2>/dev/null; exit 0' TERM INT
  while [[ -f $pidfile ]]; do
    for state in down up; do
      sleep "$period" &
      child=$!
      wait "$child"
      child=""
      [[ -f $pidfile ]] || exit 0
      ip ${pns:+-n "$pns"} link set "$port" "$state" || exit 0
    done
  done
}

mend() {  # mend N R (and the rail it was swapped with, if it was)
  local n=$1 r=$2 ns port pns other
  ns=$(rb_su_ns "$(rb_su_node_name "$n")")
  port=$(rb_su_port_dev "$n" "$r")
  pns=$(rb_su_port_ns "$n" "$r")  # the switch port's namespace: "" (the root) but in a fabric
  rb_su_stop_flap "$n" "$r"
  ip ${pns:+-n "$pns"} link set "$port" master "$(rb_su_port_bridge "$n" "$r")" 2>/dev/null || true
  ip ${pns:+-n "$pns"} link set "$port" up
  rb_su_shape "$ns" "rail$r" "$RB_SU_RATE"
  rb_su_shape "$pns" "$port" "$RB_SU_RATE"
  other=$(sed -n "s/^$n $r swapped with rail\([0-9]*\) .*/\1/p" "$faults")
  sed -i "/^$n $r /d" "$faults"
  [[ -z $other ]] || mend "$n" "$other"
}

cmd=${1:-}
case $cmd in
  list)
    if [[ -s $faults ]]; then
      while read -r n r what; do echo "$(rb_su_node_name "$n") rail$r: $what"; done <"$faults"
    fi
    [[ ${RB_SU_FABRIC:-} != 1 || ! -s $RB_SU_STATE/fabric-faults ]] || cat "$RB_SU_STATE/fabric-faults"
    if [[ ! -s $faults && ! -s $RB_SU_STATE/fabric-faults ]]; then
      if [[ ${RB_SU_FABRIC:-} == 1 ]]; then
        echo "no faults: every node link at $RB_SU_RATE Mb/s, every fabric link at $RB_SU_UPLINK Mb/s"
      else
        echo "no faults: every link at $RB_SU_RATE Mb/s"
      fi
    fi
    exit 0 ;;
  clear)
    if [[ ${RB_SU_FABRIC:-} == 1 ]] && (($# == 2 || $# == 3)) && [[ $2 == su* ]]; then
      source "$here/fabric-fault.sh"
      fab_clear "${@:2}"
    elif (($# == 3)); then
      mend "$(rb_su_node_number "$2")" "$(rb_su_rail_number "$3")"
    elif (($# == 1)); then
      for ((n = 1; n <= RB_SU_NODES; n++)); do for ((r = 0; r < RB_SU_RAILS; r++)); do mend $n $r; done; done
      : >"$faults"
      if [[ ${RB_SU_FABRIC:-} == 1 ]]; then
        source "$here/fabric-fault.sh"
        fab_clear_all
      fi
    else
      usage
    fi
    echo "netns-su: mended"
    exit 0 ;;
  swap | miscable | breach)
    [[ ${RB_SU_FABRIC:-} != 1 ]] ||
      rb_su_die "$cmd is not modelled in a fabric (each leaf is its own namespace): use an SU without --sus/--spines"
    ;;&
  swap)
    (($# == 4)) || usage
    n=$(rb_su_node_number "$2")
    a=$(rb_su_rail_number "$3")
    b=$(rb_su_rail_number "$4")
    ((a != b)) || rb_su_die "swap needs two different rails, e.g. swap node03 rail0 rail1"
    mend "$n" "$a"
    mend "$n" "$b"
    # Only the bridge each port is in changes: the links stay up at their rate, as
    # two crossed cables do.
    ip link set "$(rb_su_port "$n" "$a")" master "$(rb_su_node_leaf "$n" "$b")"
    ip link set "$(rb_su_port "$n" "$b")" master "$(rb_su_node_leaf "$n" "$a")"
    echo "$n $a swapped with rail$b (cabled to $(rb_su_node_leaf "$n" "$b"))" >>"$faults"
    echo "$n $b swapped with rail$a (cabled to $(rb_su_node_leaf "$n" "$a"))" >>"$faults"
    echo "netns-su: $(rb_su_node_name "$n") rail$a and rail$b: cables swapped"
    exit 0 ;;
  miscable)
    (($# == 4)) || usage
    n=$(rb_su_node_number "$2")
    r=$(rb_su_rail_number "$3")
    l=$(rb_su_rail_number "$4")
    ((r != l)) || rb_su_die "miscable needs another rail's leaf, e.g. miscable node02 rail1 rail0"
    mend "$n" "$r"
    ip link set "$(rb_su_port "$n" "$r")" master "$(rb_su_node_leaf "$n" "$l")"
    what="cabled to $(rb_su_node_leaf "$n" "$l"), rail$l's leaf (link up)"
    echo "$n $r $what" >>"$faults"
    echo "netns-su: $(rb_su_node_name "$n") rail$r: $what"
    exit 0 ;;
  breach)
    (($# == 4)) || usage
    [[ -n ${RB_SU_TENANTS:-} ]] || rb_su_die "breach needs an SU with tenants: bring it up with up.sh --tenants a=1-2,b=3-4"
    n=$(rb_su_node_number "$2")
    r=$(rb_su_rail_number "$3")
    t=$(rb_su_tenant_index "$4")
    own=$(rb_su_tenant_of "$n")
    ((t != own)) || rb_su_die "$(rb_su_node_name "$n") is in tenant '$4' already: name another tenant to breach into"
    mend "$n" "$r"
    ip link set "$(rb_su_port "$n" "$r")" master "$(rb_su_tenant_leaf "$r" "$t")"
    what="isolation breached: in tenant $4's network on rail$r (link up)"
    echo "$n $r $what" >>"$faults"
    echo "netns-su: $(rb_su_node_name "$n") rail$r: $what"
    exit 0 ;;
  withdraw | hash-l3)
    [[ ${RB_SU_FABRIC:-} == 1 ]] || rb_su_die "$cmd needs a fabric: bring the SU up with up.sh --sus S --spines K"
    source "$here/fabric-fault.sh"
    fab_fault "$@"
    exit 0 ;;
  degrade | lossy | down | blackhole | flap)
    if [[ ${RB_SU_FABRIC:-} == 1 && ${2:-} == su* ]]; then
      source "$here/fabric-fault.sh"
      fab_fault "$@"
      exit 0
    fi ;;
  delay) ;;
  *) usage ;;
esac
(($# >= 3)) || usage
n=$(rb_su_node_number "$2")
r=$(rb_su_rail_number "$3")
ns=$(rb_su_ns "$(rb_su_node_name "$n")")
port=$(rb_su_port_dev "$n" "$r")
pns=$(rb_su_port_ns "$n" "$r")
mend "$n" "$r"
case $cmd in
  degrade)
    rb_su_percent_rate "${4:-}" "$RB_SU_RATE" "the rate"
    rb_su_shape "$ns" "rail$r" "$rate"
    rb_su_shape "$pns" "$port" "$rate"
    what="degraded to $pct% ($rate Mb/s)" ;;
  delay)
    ms=${4:-}
    [[ $ms =~ ^[0-9]+(\.[0-9]+)?$ ]] || rb_su_die "delay needs milliseconds, e.g. 5"
    for end in node switch; do
      dev=$port side="tc qdisc"
      [[ -n $pns ]] && side="ip netns exec $pns tc qdisc"
      [[ $end == node ]] && dev=rail$r side="ip netns exec $ns tc qdisc"
      $side del dev "$dev" parent 1:10 handle 10: 2>/dev/null || true
      if ! err=$($side add dev "$dev" parent 1:10 handle 10: netem delay "${ms}ms" limit 1000 2>&1); then
        rb_su_die "cannot add a netem qdisc ($err): this kernel lacks sch_netem, so delay cannot be injected here; degrade, down and blackhole work everywhere, delay works inside the soft-RoCE VM (scripts/rxe-vm/run.sh), whose kernel has it"
      fi
    done
    what="${ms} ms added each way" ;;
  lossy)
    # No sch_netem nor act_gact/act_police on every kernel: a u32 filter (always built
    # in with htb) sends the packets whose IPv4 ID matches to a class whose queue holds
    # nothing, so they are dropped and counted by the qdisc, as a NIC counts discards.
    mask=${4:-}
    [[ $mask =~ ^0x[0-9a-fA-F]{1,4}$ ]] && ((mask > 0)) || rb_su_die "lossy needs a MASK of IPv4 ID bits, 0x1..0xffff, e.g. 0x7 (1 in 8 packets)"
    for end in node switch; do
      dev=$port side="tc"
      [[ -n $pns ]] && side="ip netns exec $pns tc"
      [[ $end == node ]] && dev=rail$r side="ip netns exec $ns tc"
      $side class add dev "$dev" parent 1: classid 1:20 htb rate "${RB_SU_RATE}mbit" quantum 60000
      $side qdisc add dev "$dev" parent 1:20 handle 20: pfifo limit 0
      # First, to the normal class: packets under 1 KiB (ACKs, latency ping-pongs: their
      # loss costs a 200 ms retransmit timeout each, which would make the link look dead,
      # not lossy) and ID 0 (Linux sends connection setup with ID 0: a link that loses
      # every handshake is a blackhole). Then 1 in MASK+1 of the data packets is dropped.
      if ! err=$($side filter add dev "$dev" parent 1: protocol ip prio 1 u32 match u16 0 0xfc00 at 2 flowid 1:10 2>&1); then
        mend "$n" "$r"
        rb_su_die "cannot add a u32 tc filter ($err): this kernel lacks cls_u32, so packets cannot be dropped selectively here"
      fi
      $side filter add dev "$dev" parent 1: protocol ip prio 2 u32 match u16 0 0xffff at 4 flowid 1:10
      $side filter add dev "$dev" parent 1: protocol ip prio 3 u32 match u16 0 "$mask" at 4 flowid 1:20
    done
    what="lossy: drops the IPv4 data packets whose ID & $mask is 0, both directions" ;;
  down)
    ip ${pns:+-n "$pns"} link set "$port" down
    what="switch port down" ;;
  blackhole)
    ip ${pns:+-n "$pns"} link set "$port" nomaster
    leafname=$(rb_su_node_leaf "$n" "$r")
    [[ -z $pns ]] || leafname="su$(rb_su_su_of "$n")-leaf$r"
    what="unplugged from $leafname (link up, no traffic)" ;;
  flap)
    period=${4:-}
    [[ $period =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v p="$period" 'BEGIN { exit !(p >= 0.1 && p <= 3600) }' ||
      rb_su_die "flap needs a PERIOD_S in seconds, 0.1..3600, e.g. 3"
    pidfile=$(rb_su_flap_pidfile "$n" "$r")
    : >"$pidfile"
    # Detached from the caller's stdout and stderr, so a caller reading them (a test,
    # $(...)) is not kept waiting for the loop to end.
    flap_loop "$port" "$period" "$pidfile" "$pns" </dev/null >/dev/null 2>&1 &
    echo $! >"$pidfile"
    what="flapping: down ${period} s, up ${period} s, ... (first down in ${period} s)" ;;
esac
echo "$n $r $what" >>"$faults"
echo "netns-su: $(rb_su_node_name "$n") rail$r: $what"

#!/usr/bin/env bash
# Builds the simulated scalable unit (see lib.sh for its shape).
#   up.sh [--nodes N] [--rails R] [--rate MBIT] [--mtu BYTES] [--oversubscription F]
#         [--tenants NAME=FIRST-LAST,NAME=FIRST-LAST...]
# Defaults: 4 nodes x 2 rails at 400 Mb/s per link (a 1:1000 model of 400G NICs), and
# leaf uplinks of the leaf's whole downlink capacity (1:1; F = 2 halves them).
# --tenants a=1-2,b=3-4: nodes 1-2 and 3-4 on separate networks (a leaf bridge per tenant
# on every rail, a spine per tenant), as a multi-tenant fabric's VLANs and VRFs keep them.
# Fabric mode, when --sus or --spines is given (fabric.sh builds it; lib.sh names it):
#   up.sh --sus S --spines K [--polarized] [--nodes N] [--rails R] [--rate M] [--oversubscription F]
# S SUs of N nodes each (S and K default to 1), an L3 leaf per SU and rail, K spines, ECMP with a
# hash seed per switch (--polarized: one seed for all), uplinks at M x N / F / K Mb/s each.
# On any failure, everything already created is torn down again.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

nodes=4 rails=2 rate=400 mtu=1500 oversub=1 tenants="" sus="" spines="" polarized=0
while (($#)); do
  case $1 in
    --sus) sus=$2; shift 2 ;;
    --spines) spines=$2; shift 2 ;;
    --polarized) polarized=1; shift ;;
    --tenants) tenants=$2; shift 2 ;;
    --oversubscription) oversub=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --rails) rails=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --mtu) mtu=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) rb_su_die "unknown option '$1': use --nodes N --rails R --rate MBIT --mtu BYTES --oversubscription F --tenants SPEC --sus S --spines K --polarized" ;;
  esac
done
if [[ -n $sus$spines ]]; then
  # Fabric mode: its own checks and builder (fabric.sh), then done.
  source "$here/fabric.sh"
  exit 0
fi
((polarized == 0)) || rb_su_die "--polarized needs a fabric: add --sus S and/or --spines K"
[[ $nodes =~ ^[0-9]+$ ]] && ((nodes >= 2 && nodes <= 99)) || rb_su_die "--nodes $nodes: use 2..99"
[[ $rails =~ ^[0-9]+$ ]] && ((rails >= 1 && rails <= 8)) || rb_su_die "--rails $rails: use 1..8"
[[ $rate =~ ^[0-9]+$ ]] && ((rate >= 1)) || rb_su_die "--rate $rate: a whole number of Mb/s, e.g. 400"
[[ $mtu =~ ^[0-9]+$ ]] && ((mtu >= 576 && mtu <= 9000)) || rb_su_die "--mtu $mtu: use 576..9000"
[[ $oversub =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v f="$oversub" 'BEGIN { exit !(f >= 1 && f <= 64) }' ||
  rb_su_die "--oversubscription $oversub: a ratio of downlink to uplink capacity, 1..64 (1: non-blocking, 2: 2:1)"
# --tenants: NAME=FIRST-LAST entries, 2 or more, that cover every node exactly once.
if [[ -n $tenants ]]; then
  declare -A owner=() seen_name=()
  count=0
  IFS=, read -ra tenant_specs <<<"$tenants"
  for spec in "${tenant_specs[@]}"; do
    [[ $spec =~ ^([a-z0-9]{1,8})=([0-9]+)-([0-9]+)$ ]] ||
      rb_su_die "--tenants: '$spec' is not NAME=FIRST-LAST (a name of 1..8 lowercase letters or digits, node numbers), e.g. a=1-2,b=3-4"
    name=${BASH_REMATCH[1]} first=$((10#${BASH_REMATCH[2]})) last=$((10#${BASH_REMATCH[3]}))
    [[ -z ${seen_name[$name]:-} ]] || rb_su_die "--tenants: tenant '$name' is named twice"
    seen_name[$name]=1
    ((first >= 1 && first <= last && last <= nodes)) ||
      rb_su_die "--tenants: $name=$first-$last is not a range inside node 1..$nodes"
    for ((n = first; n <= last; n++)); do
      [[ -z ${owner[$n]:-} ]] || rb_su_die "--tenants: node $n is in tenant '${owner[$n]}' and in '$name': give each node one tenant"
      owner[$n]=$name
    done
    count=$((count + 1))
  done
  ((count >= 2)) || rb_su_die "--tenants: '$tenants' names one tenant: name 2 or more, or leave --tenants out"
  for ((n = 1; n <= nodes; n++)); do
    [[ -n ${owner[$n]:-} ]] || rb_su_die "--tenants: node $n is in no tenant: every node needs one (e.g. a=1-2,b=3-$nodes)"
  done
  # Canonical form (node numbers without leading zeros), as lib.sh reads it.
  canon=""
  for spec in "${tenant_specs[@]}"; do
    [[ $spec =~ ^([a-z0-9]+)=([0-9]+)-([0-9]+)$ ]]
    canon+="${canon:+,}${BASH_REMATCH[1]}=$((10#${BASH_REMATCH[2]}))-$((10#${BASH_REMATCH[3]}))"
  done
  tenants=$canon
fi
# Each leaf's uplink to the spine: the leaf's downlink capacity (nodes x rate) over F.
uplink=$(awk -v n="$nodes" -v r="$rate" -v f="$oversub" 'BEGIN { u = int(n * r / f); print (u < 1 ? 1 : u) }')
rb_su_require_root
[[ -f $RB_SU_STATE/su.env ]] && rb_su_die "a simulated SU is already up ($RB_SU_STATE): run scripts/netns-su/down.sh first"
rb_su_take_net

trap 'echo "netns-su: setup failed, tearing down" >&2; "$here/down.sh" >/dev/null 2>&1 || true' ERR
mkdir -p "$RB_SU_STATE"
cat >"$RB_SU_STATE/su.env" <<STATE
RB_SU_NODES=$nodes
RB_SU_RAILS=$rails
RB_SU_RATE=$rate
RB_SU_MTU=$mtu
RB_SU_OVERSUB=$oversub
RB_SU_UPLINK=$uplink
RB_SU_NET=$RB_SU_NET
RB_SU_TENANTS=$tenants
STATE
RB_SU_TENANTS=$tenants  # lib.sh's tenant functions read it


# Leaves (one bridge per rail; with tenants one per rail and tenant) and the management
# bridge, in the root namespace.
ntenants=0
[[ -n $tenants ]] && ntenants=$(rb_su_tenant_names | wc -l)
for ((r = 0; r < rails; r++)); do
  if ((ntenants > 0)); then
    for ((t = 0; t < ntenants; t++)); do
      ip link add "$(rb_su_tenant_leaf $r $t)" type bridge
      ip link set "$(rb_su_tenant_leaf $r $t)" mtu "$mtu" up
    done
  else
    ip link add "$(rb_su_leaf $r)" type bridge
    ip link set "$(rb_su_leaf $r)" mtu "$mtu" up
  fi
done
mgmt=$(rb_su_mgmt_bridge)
ip link add "$mgmt" type bridge
ip addr add "$RB_SU_MGMT_NET.254/24" dev "$mgmt"
ip link set "$mgmt" up

# A spine: forwards between the rail subnets. Each leaf's leg into it is that leaf's
# uplink, shaped both ways to the uplink rate: at F:1 the leaf's nodes together can
# send F times more than fits through it. With tenants, one per tenant, its legs in the
# tenant's leaf bridges (every spine has 10.X.R.254: they never share a bridge).
build_spine() {  # build_spine NS PORT_SUFFIX TENANT ("" without tenants)
  local spine=$1 suffix=$2 tenant=$3 r port bridge
  ip netns add "$spine"
  ip -n "$spine" link set lo up
  sysctl_ns "$spine" net.ipv4.ip_forward=1
  sysctl_ns "$spine" net.ipv4.conf.all.rp_filter=0
  for ((r = 0; r < rails; r++)); do
    port="$RB_SU_PREFIX-sp$r$suffix"
    bridge=$(rb_su_leaf $r)
    [[ -n $tenant ]] && bridge=$(rb_su_tenant_leaf $r "$tenant")
    ip link add "$port" type veth peer name "leaf$r" netns "$spine"
    ip link set "$port" master "$bridge" mtu "$mtu" up
    ip -n "$spine" addr add "$RB_SU_RAIL_NET.$r.254/24" dev "leaf$r"
    ip -n "$spine" link set "leaf$r" mtu "$mtu" up
    rb_su_shape "" "$port" "$uplink"       # leaf -> spine
    rb_su_shape "$spine" "leaf$r" "$uplink" # spine -> leaf
  done
}
if ((ntenants > 0)); then
  for ((t = 0; t < ntenants; t++)); do build_spine "$(rb_su_tenant_spine_ns $t)" "t$t" "$t"; done
else
  build_spine "$(rb_su_spine_ns)" "" ""
fi

for ((n = 1; n <= nodes; n++)); do
  node=$(rb_su_node_name $n)
  ns=$(rb_su_ns "$node")
  rb_su_add_node "$n" "$mgmt"
  for ((r = 0; r < rails; r++)); do
    port=$(rb_su_port $n $r)
    ip link add "$port" type veth peer name "rail$r" netns "$ns"
    ip link set "$port" master "$(rb_su_node_leaf $n $r)" mtu "$mtu" up
    ip -n "$ns" link set "rail$r" mtu "$mtu"
    sysctl_ns "$ns" "net.ipv4.conf.rail$r.rp_filter=0"
    ip -n "$ns" addr add "$(rb_su_rail_ip $n $r)/24" dev "rail$r"
    ip -n "$ns" link set "rail$r" up
    # Source routing: traffic from railR's address leaves through railR; other rails'
    # subnets are reached through the spine.
    table=$((100 + r))
    ip -n "$ns" route add "$RB_SU_RAIL_NET.$r.0/24" dev "rail$r" src "$(rb_su_rail_ip $n $r)" table $table
    for ((o = 0; o < rails; o++)); do
      ((o == r)) && continue
      ip -n "$ns" route add "$RB_SU_RAIL_NET.$o.0/24" via "$RB_SU_RAIL_NET.$r.254" dev "rail$r" table $table
    done
    ip -n "$ns" rule add from "$(rb_su_rail_ip $n $r)" table $table priority $table
    # Both directions of the node<->leaf link at the SU's rate.
    rb_su_shape "$ns" "rail$r" "$rate"
    rb_su_shape "" "$port" "$rate"
  done
done
trap - ERR
tenant_note=""
if ((ntenants > 0)); then
  tenant_note=" tenants ${tenants//,/ } (a leaf bridge per rail and a spine each),"
fi
echo "netns-su: up: $nodes nodes x $rails rails at $rate Mb/s per link, MTU $mtu," \
  "leaf uplinks $uplink Mb/s ($oversub:1),$tenant_note" \
  "(nodes $(rb_su_node_name 1)..$(rb_su_node_name "$nodes"), rails rail0..rail$((rails - 1)), management $RB_SU_MGMT_NET.0/24)"

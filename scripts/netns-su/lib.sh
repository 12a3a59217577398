# Sourced by the netns-su scripts: names and state of the simulated scalable unit.
#
# The SU is a scale model of a rail-optimized cluster on one machine:
#   node NN         a network namespace rbsu-nodeNN with its own UTS name (hostname nodeNN)
#   rail R          one veth per node, railR inside (10.X.R.NN/24), into bridge rbsu-leafR
#   spine           namespace rbsu-spine, one leg into every leaf (10.X.R.254), forwarding,
#                   so slot i -> slot j (i != j) crosses it as cross-rail traffic does;
#                   each leg is its leaf's uplink, shaped both ways to nodes x rate / F
#                   (up.sh --oversubscription F, default 1)
#   management      mgmt0 in every node (10.X.200.NN/24) on bridge rbsu-mgmt, which also has
#                   10.X.200.254 in the root namespace: mpirun's out-of-band network
# X is 100..199: up.sh starts from a hash of the prefix (RB_SU_PREFIX) and takes the
# first X whose management subnet no other SU on this host holds (hashes of two
# prefixes can meet), then records it in the state, so SUs with different prefixes (the
# tests' and a demo's) can be up at once. RB_SU_NET=10.X picks it by hand.
#   links           every node<->leaf link is shaped with htb in both directions to the
#                   SU's rate, so a healthy link carries a known rate
# Everything created carries the prefix, so tear-down can find it all after a failure.
set -euo pipefail

RB_SU_PREFIX=${RB_SU_PREFIX:-rbsu}
RB_SU_STATE=${RB_SU_STATE:-/run/railbench-netns-su/$RB_SU_PREFIX}
RB_SU_NET_GIVEN=${RB_SU_NET:+yes}
RB_SU_NET=${RB_SU_NET:-10.$((100 + $(printf '%s' "$RB_SU_PREFIX" | cksum | cut -d' ' -f1) % 100))}
rb_su_set_net() {  # rb_su_set_net 10.X: the subnets that follow from it
  RB_SU_NET=$1
  RB_SU_RAIL_NET=$RB_SU_NET        # rail R: 10.X.R.0/24
  RB_SU_MGMT_NET=$RB_SU_NET.200    # management: 10.X.200.0/24, root side .254
}
rb_su_set_net "$RB_SU_NET"

rb_su_die() {
  echo "netns-su: error: $*" >&2
  exit 2
}

rb_su_require_root() {
  [[ $(id -u) -eq 0 ]] || rb_su_die "needs root (network namespaces, bridges, tc): run as root or with sudo"
  command -v ip >/dev/null || rb_su_die "'ip' not found: apt-get install iproute2"
  command -v tc >/dev/null || rb_su_die "'tc' not found: apt-get install iproute2"
}

rb_su_node_name() { printf 'node%02d' "$1"; }         # 1 -> node01
rb_su_ns() { printf '%s-%s' "$RB_SU_PREFIX" "$1"; }   # node01 -> rbsu-node01
rb_su_leaf() { printf '%s-leaf%d' "$RB_SU_PREFIX" "$1"; }
rb_su_mgmt_bridge() { printf '%s-mgmt' "$RB_SU_PREFIX"; }
rb_su_spine_ns() { printf '%s-spine' "$RB_SU_PREFIX"; }
# Root-namespace end of node N's rail R veth: the leaf's switch port (max 15 characters).
rb_su_port() { printf '%s-n%02dr%d' "$RB_SU_PREFIX" "$1" "$2"; }
rb_su_rail_ip() {  # node N, rail R (in fabric mode, on its SU's subnet of the rail)
  if [[ ${RB_SU_FABRIC:-} == 1 ]]; then
    printf '%s.%d' "$(rb_su_fab_rail_net "$(rb_su_su_of "$1")" "$2")" "$1"
  else
    printf '%s.%d.%d' "$RB_SU_RAIL_NET" "$2" "$1"
  fi
}

rb_su_load_state() {
  [[ -f $RB_SU_STATE/su.env ]] || rb_su_die "no simulated SU is up (no $RB_SU_STATE/su.env): run scripts/netns-su/up.sh first"
  RB_SU_FABRIC=""  # only a fabric's su.env sets it
  # shellcheck disable=SC1091
  source "$RB_SU_STATE/su.env"
  # The subnet up.sh actually took (an SU recorded before it was kept has the derived one).
  rb_su_set_net "$RB_SU_NET"
}

# Whether 10.X.200.254 (an SU's management address) is on any interface of this host.
rb_su_net_in_use() { ip -o addr show | grep " $1.200.254/" >/dev/null; }

# Takes RB_SU_NET, or when another SU holds it and it was not given, the next free 10.X.
rb_su_take_net() {
  local x i next
  rb_su_net_in_use "$RB_SU_NET" || return 0
  [[ -n $RB_SU_NET_GIVEN ]] &&
    rb_su_die "$RB_SU_MGMT_NET.0/24 (RB_SU_NET=$RB_SU_NET) is already in use on this host (another SU?): set another RB_SU_NET=10.N (100..199) or unset it"
  # The prefix's hash met another SU's subnet: take the next free 10.X.
  x=${RB_SU_NET#10.}
  for ((i = 1; i <= 100; i++)); do
    next=10.$((100 + (x - 100 + i) % 100))
    rb_su_net_in_use "$next" || break
  done
  rb_su_net_in_use "$next" &&
    rb_su_die "every subnet 10.100..10.199 holds an SU on this host: take some down (scripts/netns-su/down.sh with their RB_SU_PREFIX)"
  rb_su_set_net "$next"
}

# Node number from a node name or number: node03 / 3 -> 3.
rb_su_node_number() {
  local n=${1#node}
  [[ $n =~ ^[0-9]+$ ]] || rb_su_die "'$1' is not a node: use a name such as node02 or its number"
  n=$((10#$n))
  ((n >= 1 && n <= RB_SU_NODES)) || rb_su_die "node $1 does not exist: this SU has node01..$(rb_su_node_name "$RB_SU_NODES")"
  echo "$n"
}

rb_su_rail_number() {
  local r=${1#rail}
  [[ $r =~ ^[0-9]+$ ]] || rb_su_die "'$1' is not a rail: use rail0..rail$((RB_SU_RAILS - 1)) or its number"
  ((r < RB_SU_RAILS)) || rb_su_die "rail $1 does not exist: this SU has rail0..rail$((RB_SU_RAILS - 1))"
  echo "$r"
}

# Tenants (up.sh --tenants NAME=FIRST-LAST,...; RB_SU_TENANTS in su.env): every rail has
# one leaf bridge per tenant (tenant T's nodes' ports on rail R in rb_su_tenant_leaf R T)
# and every tenant its own spine namespace with a leg into each of its leaf bridges: a
# VRF per tenant, so cross-rail routes stay inside a tenant too. (Separate bridges, not
# one VLAN-filtering bridge: not every kernel has bridge VLAN filtering, this host's
# does not.) Tenant indexes are 0-based, in the order --tenants names them.
rb_su_tenant_leaf() { printf '%s-leaf%dt%d' "$RB_SU_PREFIX" "$1" "$2"; }  # rail R, tenant T
rb_su_tenant_spine_ns() { printf '%s-spine-t%d' "$RB_SU_PREFIX" "$1"; }    # tenant T
rb_su_tenant_names() {  # the tenants' names, one per line, in index order
  local spec
  local -a specs
  IFS=, read -ra specs <<<"${RB_SU_TENANTS:-}"
  for spec in "${specs[@]}"; do echo "${spec%%=*}"; done
}
rb_su_tenant_of() {  # rb_su_tenant_of N: node N's tenant index; nothing without tenants
  local i=0 spec range
  local -a specs
  IFS=, read -ra specs <<<"${RB_SU_TENANTS:-}"
  for spec in "${specs[@]}"; do
    range=${spec#*=}
    if (($1 >= ${range%-*} && $1 <= ${range#*-})); then
      echo "$i"
      return 0
    fi
    i=$((i + 1))
  done
}
rb_su_tenant_index() {  # rb_su_tenant_index NAME: its index, or an error naming the tenants
  local i=0 name
  while read -r name; do
    [[ $name == "$1" ]] && { echo "$i"; return 0; }
    i=$((i + 1))
  done < <(rb_su_tenant_names)
  rb_su_die "no tenant '$1' in this SU (tenants: $(rb_su_tenant_names | paste -sd, -))"
}
# The leaf bridge node N's rail R port belongs in: its tenant's, or the rail's.
rb_su_node_leaf() {
  local t
  t=$(rb_su_tenant_of "$1")
  if [[ -n $t ]]; then rb_su_tenant_leaf "$2" "$t"; else rb_su_leaf "$2"; fi
}

# A flapping link's background loop (fault.sh flap) keeps its pid here.
rb_su_flap_pidfile() { printf '%s/flap-%d-%d.pid' "$RB_SU_STATE" "$1" "$2"; }  # node N, rail R

# Stops the flap loop of node N rail R, if there is one (by the pid it recorded).
rb_su_stop_flap() {  # rb_su_stop_flap N R
  local pidfile pid
  pidfile=$(rb_su_flap_pidfile "$1" "$2")
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile" 2>/dev/null || true)
  rm -f "$pidfile"
  if [[ $pid =~ ^[0-9]+$ ]]; then
    kill "$pid" 2>/dev/null || true
    # Wait (briefly) until it is gone, so the caller's `ip link set up` comes last.
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
}

# Shapes one direction of a link: htb, one class, everything in it.
rb_su_shape() {  # rb_su_shape NETNS-or-"" DEV RATE_MBIT
  local ns=$1 dev=$2 rate=$3
  local -a in=()
  [[ -n $ns ]] && in=(ip netns exec "$ns")
  "${in[@]}" tc qdisc del dev "$dev" root 2>/dev/null || true  # htb cannot be changed in place
  "${in[@]}" tc qdisc add dev "$dev" root handle 1: htb default 10
  # A burst of ~2 ms at the rate keeps the shaper accurate for the message sizes used.
  local burst=$((rate * 1000 / 8 * 2 / 1000 + 16))
  "${in[@]}" tc class add dev "$dev" parent 1: classid 1:10 htb rate "${rate}mbit" ceil "${rate}mbit" quantum 60000 \
    burst "${burst}k" cburst "${burst}k"
  # A shallow queue (~64 packets) as a switch port has, not veth's 1000-packet default:
  # a deep one turns a busy direction into tens of milliseconds of delay for the other
  # direction's ACKs.
  "${in[@]}" tc qdisc add dev "$dev" parent 1:10 handle 10: pfifo limit 64
}

# ---- Fabric mode (up.sh --sus S --spines K; RB_SU_FABRIC=1 in su.env) ----
# S SUs of RB_SU_SU_NODES nodes each (RB_SU_NODES is then the total, numbered across SUs),
# one L3 leaf namespace per SU and rail, K spine namespaces, a veth per leaf-spine link:
#   leaf (s, r)     namespace PREFIX-s<s>l<r>, config name su<s>-leaf<r>: bridge br0 with
#                   the node ports n<NN> and the SVI 10.X.(16(s-1)+r).254/24
#   spine k         namespace PREFIX-sp<k>, config name spine<k>
#   link (s, r, k)  su<s>-leaf<r>-spine<k>: spine<k> in the leaf (10.X.(128+8(s-1)+r).(4k+1)/30),
#                   s<s>l<r> in the spine (.(4k+2)/30), shaped both ways to RB_SU_UPLINK
# Every leaf reaches every other leaf's subnet by one multipath route over the spines whose
# link is usable (rb_su_fab_routes); L4 ECMP hashing with a seed per switch.
rb_su_su_of() { echo $((($1 - 1) / RB_SU_SU_NODES + 1)); }                 # node N -> SU s
rb_su_fab_leaf_ns() { printf '%s-s%dl%d' "$RB_SU_PREFIX" "$1" "$2"; }      # SU s, rail r
rb_su_fab_spine_ns() { printf '%s-sp%d' "$RB_SU_PREFIX" "$1"; }            # spine k
rb_su_fab_rail_net() { printf '%s.%d' "$RB_SU_NET" $((16 * ($1 - 1) + $2)); } # s r -> 10.X.Y
rb_su_fab_link_net() { printf '%s.%d' "$RB_SU_NET" $((128 + 8 * ($1 - 1) + $2)); }
rb_su_fab_leaf_addr() { printf '%s.%d' "$(rb_su_fab_link_net "$1" "$2")" $((4 * $3 + 1)); }  # s r k
rb_su_fab_spine_addr() { printf '%s.%d' "$(rb_su_fab_link_net "$1" "$2")" $((4 * $3 + 2)); } # s r k
rb_su_fab_link_name() { printf 'su%d-leaf%d-spine%d' "$1" "$2" "$3"; }

# Where node N's rail-R switch port is: a namespace ("" for the root) and a device.
rb_su_port_ns() {
  if [[ ${RB_SU_FABRIC:-} == 1 ]]; then rb_su_fab_leaf_ns "$(rb_su_su_of "$1")" "$2"; fi
}
rb_su_port_dev() {
  if [[ ${RB_SU_FABRIC:-} == 1 ]]; then printf 'n%02d' "$1"; else rb_su_port "$1" "$2"; fi
}
# The bridge that port belongs in (in its namespace).
rb_su_port_bridge() {
  if [[ ${RB_SU_FABRIC:-} == 1 ]]; then echo br0; else rb_su_node_leaf "$1" "$2"; fi
}

# su1-leaf0-spine2 -> "1 0 2", or an error naming the links that exist.
rb_su_fab_link_parse() {
  [[ $1 =~ ^su([0-9]+)-leaf([0-9]+)-spine([0-9]+)$ ]] &&
    ((BASH_REMATCH[1] >= 1 && BASH_REMATCH[1] <= RB_SU_SUS && BASH_REMATCH[2] < RB_SU_RAILS &&
      BASH_REMATCH[3] < RB_SU_SPINES)) ||
    rb_su_die "no fabric link '$1': links are su<1..$RB_SU_SUS>-leaf<0..$((RB_SU_RAILS - 1))>-spine<0..$((RB_SU_SPINES - 1))>, e.g. su1-leaf0-spine$((RB_SU_SPINES - 1))"
  echo "$((10#${BASH_REMATCH[1]})) $((10#${BASH_REMATCH[2]})) $((10#${BASH_REMATCH[3]}))"
}

rb_su_fab_flap_pidfile() { printf '%s/fflap-%s.pid' "$RB_SU_STATE" "$1"; }  # link name
rb_su_stop_pidfile() {  # stops the loop whose pid the file holds, then removes the file
  local pid
  [[ -f $1 ]] || return 0
  pid=$(cat "$1" 2>/dev/null || true)
  rm -f "$1"
  if [[ $pid =~ ^[0-9]+$ ]]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
}

# Names of the devices whose administrative state is up in namespace NS, one per line.
rb_su_ns_up_devs() {
  ip -n "$1" -o link show | awk -F': ' '$3 ~ /[<,]UP[,>]/ { split($2, a, "@"); print a[1] }'
}

# Routing convergence: recomputes every leaf's and spine's routes from the links' state.
# A link is usable when both ends are administratively up (a down or flapping link is
# not, a blackholed one still is: routing cannot see that); a withdrawn (leaf, spine)
# ($RB_SU_STATE/withdrawn, link names) is not used by that leaf for its own routes only.
# The caller holds the fabric's lock (rb_su_fab_lock), so that a link's change and the
# routes that follow from it are one step that no flapping link's loop can split.
rb_su_fab_lock() {
  exec 9>"$RB_SU_STATE/routes.lock"
  flock 9
}
rb_su_fab_routes() {
  (
    local s r k s2 r2 leaf nh dev
    declare -A up=() withdrawn=()
    for ((k = 0; k < RB_SU_SPINES; k++)); do
      while read -r dev; do up[sp$k-$dev]=1; done < <(rb_su_ns_up_devs "$(rb_su_fab_spine_ns $k)")
    done
    for ((s = 1; s <= RB_SU_SUS; s++)); do
      for ((r = 0; r < RB_SU_RAILS; r++)); do
        while read -r dev; do up[l$s-$r-$dev]=1; done < <(rb_su_ns_up_devs "$(rb_su_fab_leaf_ns $s $r)")
      done
    done
    if [[ -f $RB_SU_STATE/withdrawn ]]; then
      while read -r dev; do [[ -n $dev ]] && withdrawn[$dev]=1; done <"$RB_SU_STATE/withdrawn"
    fi
    usable() { [[ -n ${up[l$1-$2-spine$3]:-} && -n ${up[sp$3-s$1l$2]:-} ]]; }
    for ((s = 1; s <= RB_SU_SUS; s++)); do
      for ((r = 0; r < RB_SU_RAILS; r++)); do
        leaf=$(rb_su_fab_leaf_ns $s $r)
        local add="" del=""
        for ((s2 = 1; s2 <= RB_SU_SUS; s2++)); do
          for ((r2 = 0; r2 < RB_SU_RAILS; r2++)); do
            ((s2 == s && r2 == r)) && continue
            nh=""
            for ((k = 0; k < RB_SU_SPINES; k++)); do
              usable $s $r $k && usable $s2 $r2 $k || continue
              [[ -z ${withdrawn[$(rb_su_fab_link_name $s $r $k)]:-} ]] || continue
              nh+=" nexthop via $(rb_su_fab_spine_addr $s $r $k) dev spine$k weight 1"
            done
            if [[ -n $nh ]]; then
              add+="route replace $(rb_su_fab_rail_net $s2 $r2).0/24$nh"$'\n'
            else
              del+="route del $(rb_su_fab_rail_net $s2 $r2).0/24"$'\n'
            fi
          done
        done
        [[ -z $add ]] || ip -n "$leaf" -batch - <<<"$add"
        [[ -z $del ]] || ip -n "$leaf" -force -batch - <<<"$del" >/dev/null 2>&1 || true
      done
    done
    for ((k = 0; k < RB_SU_SPINES; k++)); do
      local add="" del=""
      for ((s = 1; s <= RB_SU_SUS; s++)); do
        for ((r = 0; r < RB_SU_RAILS; r++)); do
          if usable $s $r $k; then
            add+="route replace $(rb_su_fab_rail_net $s $r).0/24 via $(rb_su_fab_leaf_addr $s $r $k) dev s${s}l$r"$'\n'
          else
            del+="route del $(rb_su_fab_rail_net $s $r).0/24"$'\n'
          fi
        done
      done
      [[ -z $add ]] || ip -n "$(rb_su_fab_spine_ns $k)" -batch - <<<"$add"
      [[ -z $del ]] || ip -n "$(rb_su_fab_spine_ns $k)" -force -batch - <<<"$del" >/dev/null 2>&1 || true
    done
  )
}

# Sets a sysctl inside a namespace.
sysctl_ns() { ip netns exec "$1" sysctl -qw "$2" >/dev/null; }

# Node N's namespace as a multi-rail host, with its management NIC (mgmt0, 10.X.200.N)
# in bridge MGMT: answers ARP only on the NIC that owns the address and routes by source
# address (the callers add the rails), as multi-rail hosts do.
rb_su_add_node() {  # rb_su_add_node N MGMT
  local n=$1 mgmt=$2 ns
  ns=$(rb_su_ns "$(rb_su_node_name "$n")")
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  sysctl_ns "$ns" net.ipv4.conf.all.arp_ignore=1
  sysctl_ns "$ns" net.ipv4.conf.all.arp_announce=2
  sysctl_ns "$ns" net.ipv4.conf.all.rp_filter=0
  sysctl_ns "$ns" net.ipv4.conf.default.rp_filter=0
  ip link add "$RB_SU_PREFIX-n$(printf %02d "$n")m" type veth peer name mgmt0 netns "$ns"
  ip link set "$RB_SU_PREFIX-n$(printf %02d "$n")m" master "$mgmt" up
  ip -n "$ns" addr add "$RB_SU_MGMT_NET.$n/24" dev mgmt0
  ip -n "$ns" link set mgmt0 up
}

# A degraded link's rate: PCT (1..100) of BASE Mb/s, at least 1; dies naming WHAT on a bad PCT.
rb_su_percent_rate() {  # rb_su_percent_rate PCT BASE WHAT: sets pct and rate
  pct=$1
  [[ $pct =~ ^[0-9]+$ ]] && ((pct >= 1 && pct <= 100)) || rb_su_die "degrade needs a PERCENT of $3, 1..100"
  rate=$(($2 * pct / 100))
  ((rate >= 1)) || rate=1
}

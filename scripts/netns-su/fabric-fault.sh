# Sourced by fault.sh in a fabric: the faults of the leaf-spine links (fault.sh's header
# lists them). One fault per link at a time: each first mends the link. Faults in place are
# kept in $RB_SU_STATE/fabric-faults ("LINK: what"), withdrawn routes in .../withdrawn.
fab_faults="$RB_SU_STATE/fabric-faults"
touch "$fab_faults" "$RB_SU_STATE/withdrawn"
rb_su_fab_lock  # held until fault.sh ends

# fab_ends LINK: sets link leaf spine ldev sdev (namespaces and devices of its two ends).
fab_ends() {
  local parsed fs fr fk
  parsed=$(rb_su_fab_link_parse "$1")
  read -r fs fr fk <<<"$parsed"
  link=$1 leaf=$(rb_su_fab_leaf_ns "$fs" "$fr") spine=$(rb_su_fab_spine_ns "$fk")
  ldev=spine$fk sdev=s${fs}l$fr
}

# su1-leaf0 spine2 -> su1-leaf0-spine2 (checked).
fab_link_of() {
  [[ $1 =~ ^su[0-9]+-leaf[0-9]+$ && $2 =~ ^spine[0-9]+$ ]] ||
    rb_su_die "'$1 $2' is not a leaf and a spine: name them as the config does, e.g. su1-leaf0 spine$((RB_SU_SPINES - 1))"
  rb_su_fab_link_parse "$1-$2" >/dev/null
  echo "$1-$2"
}

# An nftables table per faulty link end, named after the device: dropped when mended.
fab_nft() {  # fab_nft NS DEV EGRESS_RULE [INGRESS_RULE]
  local ns=$1 dev=$2 out=$3 in=${4:-}
  command -v nft >/dev/null || rb_su_die "'nft' not found: apt-get install nftables (lossy and blackhole fabric links use it)"
  {
    echo "table inet rbfault_$dev {"
    echo "  chain out { type filter hook postrouting priority 0; policy accept; oifname \"$dev\" $out; }"
    [[ -z $in ]] || echo "  chain in { type filter hook prerouting priority 0; policy accept; iifname \"$dev\" $in; }"
    echo "}"
  } | ip netns exec "$ns" nft -f - || rb_su_die "nft could not load a rule in $ns (a kernel without nf_tables?)"
}

# su1-leaf0 -> "1 0" (its SU and rail), checked.
fab_leaf_parse() {
  [[ $1 =~ ^su([0-9]+)-leaf([0-9]+)$ ]] && ((BASH_REMATCH[1] >= 1 && BASH_REMATCH[1] <= RB_SU_SUS &&
    BASH_REMATCH[2] < RB_SU_RAILS)) ||
    rb_su_die "no leaf '$1': leaves are su<1..$RB_SU_SUS>-leaf<0..$((RB_SU_RAILS - 1))>, e.g. su1-leaf0"
  echo "$((10#${BASH_REMATCH[1]})) $((10#${BASH_REMATCH[2]}))"
}

# The fields a switch's ECMP hash reads (fabric.sh's make_switch): 0x37 the 5-tuple, 0x03
# the addresses only.
fab_hash_fields() {  # fab_hash_fields LEAF FIELDS
  local s r
  read -r s r <<<"$(fab_leaf_parse "$1")"
  ip netns exec "$(rb_su_fab_leaf_ns "$s" "$r")" sysctl -qw "net.ipv4.fib_multipath_hash_fields=$2"
}

# Mends one link (up at both ends, its rate, no drop rules, not withdrawn, no flap loop)
# or one leaf (its hash back to the 5-tuple). Routes are the caller's to converge (once,
# after all changes).
fab_mend() {  # fab_mend LINK | fab_mend LEAF
  if [[ $1 =~ ^su[0-9]+-leaf[0-9]+$ ]]; then
    fab_hash_fields "$1" 0x0037
    sed -i "/^$1: /d" "$fab_faults"
    return 0
  fi
  fab_ends "$1"
  rb_su_stop_pidfile "$(rb_su_fab_flap_pidfile "$link")"
  ip -n "$leaf" link set "$ldev" up
  ip -n "$spine" link set "$sdev" up
  ip netns exec "$leaf" nft delete table inet "rbfault_$ldev" 2>/dev/null || true
  ip netns exec "$spine" nft delete table inet "rbfault_$sdev" 2>/dev/null || true
  rb_su_shape "$leaf" "$ldev" "$RB_SU_UPLINK"
  rb_su_shape "$spine" "$sdev" "$RB_SU_UPLINK"
  sed -i "/^$link\$/d" "$RB_SU_STATE/withdrawn"
  sed -i "/^$link: /d" "$fab_faults"
}

fab_clear() {  # fab_clear LINK | fab_clear LEAF SPINE
  local name=$1
  if (($# == 2)); then name=$(fab_link_of "$1" "$2") || exit 2; fi
  fab_mend "$name"
  rb_su_fab_routes
}

fab_clear_all() {  # every link with a fault recorded or a flap loop
  local name f
  local -a names=()
  while IFS=: read -r name _; do [[ -n $name ]] && names+=("$name"); done <"$fab_faults"
  while read -r name; do [[ -n $name ]] && names+=("$name"); done <"$RB_SU_STATE/withdrawn"
  for f in "$RB_SU_STATE"/fflap-*.pid; do
    [[ -f $f ]] || continue
    name=${f##*/fflap-}
    names+=("${name%.pid}")
  done
  for name in $(printf '%s\n' "${names[@]}" | sort -u); do fab_mend "$name"; done
  rb_su_fab_routes
}

# The loop that flaps a fabric link: both ends down, routes converge, wait, both up,
# routes converge, wait... It ends when its pid file goes (clear, down.sh). Each change
# happens under the fabric's lock, in a child it can end at once; a change that was
# waiting for the lock while the link was being mended finds the pid file gone.
fab_flap_loop() {  # fab_flap_loop PERIOD_S PIDFILE (with fab_ends' variables set)
  local period=$1 pidfile=$2 child="" state
  trap '[[ -n $child ]] && kill "$child" 2>/dev/null; exit 0' TERM INT
  while [[ -f $pidfile ]]; do
    for state in down up; do
      sleep "$period" &
      child=$!
      wait "$child"
      [[ -f $pidfile ]] || exit 0
      (
        flock 9
        [[ -f $pidfile ]] || exit 0
        ip -n "$leaf" link set "$ldev" "$state"
        ip -n "$spine" link set "$sdev" "$state"
        rb_su_fab_routes
      ) 9>"$RB_SU_STATE/routes.lock" &
      child=$!
      wait "$child" || exit 0
      child=""
    done
  done
}

fab_fault() {  # fab_fault CMD LINK [ARG] | fab_fault withdraw LEAF SPINE | fab_fault hash-l3 LEAF
  local cmd=$1 what pct rate permille period pidfile
  (($# >= 2)) || usage
  if [[ $cmd == hash-l3 ]]; then
    (($# == 2)) || usage
    fab_mend "$2"
    fab_hash_fields "$2" 0x0003
    echo "$2: hashes the addresses only (not the ports): all flows between two NICs take one spine" >>"$fab_faults"
    echo "netns-su: $2 hashes the source and destination addresses only"
    return 0
  fi
  if [[ $cmd == withdraw ]]; then
    (($# == 3)) || usage
    link=$(fab_link_of "$2" "$3") || exit 2
    fab_mend "$link"
    echo "$link" >>"$RB_SU_STATE/withdrawn"
    rb_su_fab_routes
    echo "$link: withdrawn: ${link%-spine*} no longer routes over spine${link##*-spine}" >>"$fab_faults"
    echo "netns-su: ${link%-spine*} stops routing over spine${link##*-spine} (the other leaves still use it)"
    return 0
  fi
  fab_mend "$2"
  case $cmd in
    degrade)
      rb_su_percent_rate "${3:-}" "$RB_SU_UPLINK" "the uplink rate"
      rb_su_shape "$leaf" "$ldev" "$rate"
      rb_su_shape "$spine" "$sdev" "$rate"
      what="degraded to $pct% ($rate Mb/s of $RB_SU_UPLINK), both directions" ;;
    down)
      ip -n "$leaf" link set "$ldev" down
      ip -n "$spine" link set "$sdev" down
      what="down (no carrier at either end): routes avoid it" ;;
    lossy)
      pct=${3:-}
      [[ $pct =~ ^[0-9]+(\.[0-9]+)?$ ]] && permille=$(awk -v p="$pct" 'BEGIN { printf "%d", p * 10 + 0.5 }') &&
        ((permille >= 1 && permille <= 500)) || rb_su_die "lossy needs a PERCENT of packets to drop, 0.1..50 (e.g. 2 or 0.5)"
      fab_nft "$leaf" "$ldev" "numgen random mod 1000 < $permille counter drop"
      fab_nft "$spine" "$sdev" "numgen random mod 1000 < $permille counter drop"
      what="lossy: drops $pct% of packets at random, both directions" ;;
    blackhole)
      fab_nft "$leaf" "$ldev" "counter drop" "counter drop"
      fab_nft "$spine" "$sdev" "counter drop" "counter drop"
      what="blackholed: link up and routed over, nothing passes" ;;
    flap)
      period=${3:-}
      [[ $period =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v p="$period" 'BEGIN { exit !(p >= 0.1 && p <= 3600) }' ||
        rb_su_die "flap needs a PERIOD_S in seconds, 0.1..3600, e.g. 3"
      pidfile=$(rb_su_fab_flap_pidfile "$link")
      : >"$pidfile"
      # Without this process's lock (fd 9), which it would otherwise hold for as long as it runs.
      fab_flap_loop "$period" "$pidfile" </dev/null >/dev/null 2>&1 9>&- &
      echo $! >"$pidfile"
      what="flapping: down ${period} s, up ${period} s, ... (first down in ${period} s; routes follow)" ;;
    *) usage ;;
  esac
  rb_su_fab_routes
  echo "$link: $what" >>"$fab_faults"
  echo "netns-su: $link: $what"
}

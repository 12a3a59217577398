#!/usr/bin/env bash
# Removes everything the simulated SU created (namespaces, bridges, veths, state),
# whatever state a failed run left it in. Safe to run twice.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rb_su_require_root
set +e
# Flapping links' background loops first (fault.sh flap), so none touches a link below.
for pidfile in "$RB_SU_STATE"/flap-*.pid; do
  [[ -f $pidfile ]] || continue
  f=${pidfile##*/flap-}
  f=${f%.pid}
  rb_su_stop_flap "${f%-*}" "${f#*-}"
done
for pidfile in "$RB_SU_STATE"/fflap-*.pid; do  # a fabric's flapping links
  [[ -f $pidfile ]] && rb_su_stop_pidfile "$pidfile"
done
# Processes still inside a node (a killed mpirun's ranks) would keep a namespace alive.
for ns in $(ip netns list | awk '{print $1}' | grep "^$RB_SU_PREFIX-"); do
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [[ -n $pids ]] && kill -9 $pids 2>/dev/null
  ip netns del "$ns"
done
for dev in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$RB_SU_PREFIX-"); do
  ip link del "$dev" 2>/dev/null
done
rm -rf "$RB_SU_STATE"
left=$( (ip netns list | grep "^$RB_SU_PREFIX-"; ip -o link show | grep ": $RB_SU_PREFIX-") | wc -l)
if ((left > 0)); then
  echo "netns-su: error: $left namespaces or links with prefix $RB_SU_PREFIX- are still there" >&2
  exit 1
fi
echo "netns-su: down (nothing with prefix $RB_SU_PREFIX- left)"

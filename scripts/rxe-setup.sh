#!/usr/bin/env bash
# Soft-RoCE on this machine's own kernel: creates, removes or shows rxe devices (one
# per network interface), for a laptop or workstation whose kernel has rdma_rxe.
# Where the kernel has no RDMA at all, use scripts/rxe-vm/run.sh instead: it runs a
# command in a throwaway VM that has rxe devices.
#
# usage: scripts/rxe-setup.sh add|del|status [--netdev IFACE[,IFACE...]] [--rails N]
#   add     modprobe rdma_rxe, then rxe0 on the first interface, rxe1 on the second, ...
#           (default interface: the one of the default route; with --rails N and no
#           --netdev: the first N interfaces that are up and have an IPv4 address)
#   del     remove the rxe devices that add created (remembered in $state_file)
#   status  rdma link output and the devices add created
set -euo pipefail

readonly state_file=/run/railbench-rxe-setup.devs

msg() { echo "rxe-setup: $*" >&2; }
die() {
  msg "$*"
  exit 1
}

usage() {
  cat <<EOF
usage: scripts/rxe-setup.sh add|del|status [--netdev IFACE[,IFACE...]] [--rails N]
  add     modprobe rdma_rxe; rxe0 on the first interface, rxe1 on the second, ...
          (default: the default route's interface; --rails N without --netdev:
          the first N up interfaces with an IPv4 address)
  del     remove the rxe devices that add created (listed in $state_file)
  status  rdma link output and the devices add created
Kernel without RDMA? Use scripts/rxe-vm/run.sh (a VM with rxe devices) instead.
EOF
}

action="" rails="" netdevs=()

parse_args() {
  (($#)) || { usage >&2; exit 2; }
  action=$1
  shift
  case $action in
    add | del | status) ;;
    -h | --help) usage; exit 0 ;;
    *) msg "unknown action '$action'"; usage >&2; exit 2 ;;
  esac
  while (($#)); do
    case $1 in
      --netdev) IFS=, read -ra netdevs <<<"${2-}"; shift ;;
      --rails) rails=${2-}; shift ;;
      -h | --help) usage; exit 0 ;;
      *) msg "unknown option '$1'"; usage >&2; exit 2 ;;
    esac
    shift || { msg "option needs a value"; exit 2; }
  done
  if [[ -n $rails ]] && ! [[ $rails =~ ^[1-9][0-9]*$ ]]; then
    msg "--rails wants a positive whole number, got '$rails'"
    exit 2
  fi
}

need_root() {
  (($(id -u) == 0)) || die "$action needs root: sudo $0 $action ..."
}

need_rdma_tool() {
  command -v rdma >/dev/null || die "no 'rdma' tool: run scripts/install-deps.sh (package iproute2)"
}

# The kernel can do soft-RoCE if rdma_rxe is loaded or built in, or modprobe can find
# it. On kernels built without CONFIG_INFINIBAND none of that holds.
kernel_has_rxe() {
  [[ -d /sys/module/rdma_rxe ]] && return 0
  grep -qs '/rdma_rxe\.ko' "/lib/modules/$(uname -r)/modules.builtin" && return 0
  modprobe -n -q rdma_rxe 2>/dev/null
}

no_rxe_message() {
  local why="it has no rdma_rxe module"
  [[ -d /sys/class/infiniband ]] || why="it was built without RDMA support (no /sys/class/infiniband, no rdma_rxe)"
  msg "this kernel ($(uname -r)) cannot do soft-RoCE: $why."
  msg "Run the command in a VM with rxe devices instead, e.g.:"
  msg "  scripts/rxe-vm/run.sh --rails 2 -- ibv_devinfo"
}

# Interfaces to use: --netdev as given; else the first N up interfaces with an IPv4
# address (N from --rails); else the default route's interface.
pick_netdevs() {
  if ((${#netdevs[@]})); then
    if [[ -n $rails ]] && ((${#netdevs[@]} < rails)); then
      die "--rails $rails but only ${#netdevs[@]} interfaces in --netdev (rxe takes one device per interface)"
    fi
    [[ -z $rails ]] || netdevs=("${netdevs[@]:0:rails}")
    return 0
  fi
  if [[ -n $rails ]]; then
    mapfile -t netdevs < <(ip -o -4 addr show up | awk '$2 != "lo" { print $2 }' | sort -u | head -n "$rails")
    ((${#netdevs[@]} == rails)) ||
      die "--rails $rails but only ${#netdevs[@]} up interfaces with an IPv4 address (${netdevs[*]:-none}); name them with --netdev"
    return 0
  fi
  local dev
  # awk reads to the end (no `exit`): an early exit would SIGPIPE ip, failing under pipefail.
  dev=$(ip route show default | awk '!d { for (i = 1; i < NF; i++) if ($i == "dev") { d = $(i + 1); break } } END { print d }')
  [[ -n $dev ]] || die "no default route to pick an interface from: name one with --netdev IFACE"
  netdevs=("$dev")
}

# The rxe device already bound to NETDEV, if any ("link rxe0/1 state ... netdev eth0").
rxe_on() {
  rdma link show 2>/dev/null | awk -v nd="$1" '!r && $0 ~ (" netdev " nd "( |$)") { split($2, a, "/"); r = a[1] } END { if (r != "") print r }'
}

do_add() {
  need_root
  need_rdma_tool
  kernel_has_rxe || { no_rxe_message; exit 1; }
  pick_netdevs
  # Without a crc32 implementation rdma_rxe cannot compute its ICRC and "rdma link
  # add" fails with "No such file or directory"; crc32_generic may be built in.
  # (Loaded modules are left alone: modprobe fails without a module tree even then.)
  if [[ ! -d /sys/module/rdma_rxe ]]; then
    modprobe -q crc32_generic 2>/dev/null || true
    modprobe rdma_rxe || die "modprobe rdma_rxe failed (see dmesg)"
  fi
  # rdma_cm users (perftest -R, libfabric verbs) need it.
  [[ -d /sys/module/rdma_ucm ]] || modprobe -q rdma_ucm 2>/dev/null || true
  local k=0 dev name existing
  for dev in "${netdevs[@]}"; do
    [[ -e /sys/class/net/$dev ]] || die "no network interface '$dev'"
    existing=$(rxe_on "$dev")
    if [[ -n $existing ]]; then
      msg "$dev already has $existing; leaving it"
      continue
    fi
    # rxe0, rxe1, ... in --netdev order, skipping names that some other device holds.
    while [[ -e /sys/class/infiniband/rxe$k ]]; do k=$((k + 1)); done
    name=rxe$k
    rdma link add "$name" type rxe netdev "$dev" || die "rdma link add $name type rxe netdev $dev failed (see dmesg)"
    echo "$name" >>"$state_file"
    msg "created $name on $dev"
  done
  rdma link show
}

do_del() {
  need_root
  need_rdma_tool
  if [[ ! -s $state_file ]]; then
    msg "no rxe devices created by rxe-setup.sh (nothing in $state_file)"
    return 0
  fi
  local name failed=0
  while read -r name; do
    if [[ ! -e /sys/class/infiniband/$name ]]; then
      msg "$name is gone already"
    elif rdma link delete "$name"; then
      msg "removed $name"
    else
      msg "could not remove $name"
      failed=1
    fi
  done <"$state_file"
  ((failed)) || rm -f "$state_file"
  return "$failed"
}

do_status() {
  if ! kernel_has_rxe && [[ ! -d /sys/class/infiniband ]]; then
    no_rxe_message
    exit 1
  fi
  need_rdma_tool
  local links
  links=$(rdma link show)
  echo "${links:-no RDMA links}"
  if [[ -s $state_file ]]; then
    echo "created by rxe-setup.sh: $(tr '\n' ' ' <"$state_file")"
  fi
}

main() {
  parse_args "$@"
  "do_$action"
}

main "$@"

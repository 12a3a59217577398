#!/bin/busybox sh
# /init of the rxe-vm initramfs (run by the guest kernel as PID 1, under busybox sh).
# run.sh copies this file into the initramfs and keys its initramfs cache by its hash,
# so any edit here rebuilds the initramfs on the next run.
#
# It brings up a root that is the host's root (read-only 9p) with fresh tmpfs on
# /tmp, /run and /dev/shm and the output share on /out, loads soft-RoCE, makes one
# rxe device per rail, tells the host "started" through the control share, runs the
# command written by run.sh, hands its exit code back and powers off.
# Settings come from /ctl/vm.conf (written by run.sh), not from the kernel cmdline.

PATH=/bin:/sbin:/usr/bin:/usr/sbin
export PATH
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin /proc /sys /dev /mnt /newroot
/bin/busybox --install -s

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# The cpio carries /dev/console, but re-open it from devtmpfs in case it did not.
exec </dev/null >/dev/console 2>&1

VERBOSE=0
grep -qw rxe_vm.verbose /proc/cmdline && VERBOSE=1
if [ "$VERBOSE" = 1 ]; then
  # Trace with the guest's uptime, to see where boot time goes.
  PS4='+ $(cut -d" " -f1 /proc/uptime) '
  set -x
else
  # "quiet loglevel=1" on the cmdline already hides boot noise; keep it hidden later too
  # (module loads, rxe link messages).
  echo 1 >/proc/sys/kernel/printk
fi

CTL=/mnt/ctl
NEW=/newroot

power_off() {
  sync
  # console loglevel 0: hide the kernel's own "reboot: Power down" line.
  [ "$VERBOSE" = 1 ] || echo 0 >/proc/sys/kernel/printk
  poweroff -f
  # Not reached unless poweroff failed; panic=-1 plus qemu -no-reboot ends qemu then.
  exit 1
}

# Setup failed: leave the reason and the kernel log for run.sh (which prints them),
# or print them here when the control share is not up yet, then power off.
CTL_UP=0
fail() {
  if [ "$CTL_UP" = 1 ]; then
    echo "$*" >"$CTL/setup-failed"
    dmesg >"$CTL/dmesg.txt" 2>&1
  else
    echo "rxe-vm: guest setup failed: $*"
    dmesg | tail -n 15
  fi
  power_off
}

# Modules for virtio-pci and 9p, in dependency order (run.sh writes the order file;
# plain insmod: busybox modprobe would need a module tree in the initramfs).
while read -r ko; do
  insmod "/lib/rxe-vm/$ko" || fail "insmod $ko"
done </lib/rxe-vm/order

# mount_9p TAG DIR [extra options]
mount_9p() {
  mkdir -p "$2"
  mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000${3:+,$3}" "$1" "$2" ||
    fail "mount of 9p share '$1' on $2"
}
mount_9p ctl "$CTL"
CTL_UP=1
# Progress for run.sh's messages: the last stage reached, on the control share.
stage() { echo "$*" >"$CTL/stage"; }
stage "mounting the host root, kernel and output shares"
[ -r "$CTL/vm.conf" ] || fail "no $CTL/vm.conf on the control share"
# shellcheck source=/dev/null # written by run.sh: RAILS, WORKDIR, OUT_HOST
. "$CTL/vm.conf"
# cache=loose on the read-only shares: the guest keeps what it read, so programs
# start in a fraction of the time (every exec, stat and library load would be a
# round trip to qemu otherwise). The price: changes the host makes to those files
# while the VM runs may go unseen. The output share stays uncached.
mount_9p hostroot /mnt/host ro,cache=loose
mount_9p kernel /mnt/kernel ro,cache=loose
mount_9p out /mnt/out

# New root: a tmpfs skeleton with the host's top-level directories bound in
# read-only. The host root itself is read-only, so only this way can /out, /tmp and
# friends be mount points (the host has no /out).
mount -t tmpfs -o mode=0755 rootfs "$NEW" || fail "tmpfs for the new root"
for entry in /mnt/host/*; do
  name=${entry#/mnt/host/}
  case "$name" in
    proc | sys | dev | run | tmp | out) continue ;;
  esac
  if [ -L "$entry" ]; then
    ln -s "$(readlink "$entry")" "$NEW/$name"
  elif [ -d "$entry" ]; then
    mkdir "$NEW/$name" || fail "mkdir /$name"
    mount -o bind "$entry" "$NEW/$name" || fail "bind /$name"
  elif [ -f "$entry" ]; then
    : >"$NEW/$name" || fail "create /$name"
    mount -o bind "$entry" "$NEW/$name" || fail "bind /$name"
  fi
done
mkdir -p "$NEW/proc" "$NEW/sys" "$NEW/dev" "$NEW/run" "$NEW/tmp" "$NEW/out" "$NEW/.rxe-vm/ctl" "$NEW/.rxe-vm/kernel"
mount -t proc proc "$NEW/proc"
mount -t sysfs sysfs "$NEW/sys"
mount -t devtmpfs devtmpfs "$NEW/dev"
mkdir -p "$NEW/dev/pts" "$NEW/dev/shm"
# What udev would add: bash's <(...) needs /dev/fd.
ln -s /proc/self/fd "$NEW/dev/fd"
ln -s /proc/self/fd/0 "$NEW/dev/stdin"
ln -s /proc/self/fd/1 "$NEW/dev/stdout"
ln -s /proc/self/fd/2 "$NEW/dev/stderr"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$NEW/dev/pts"
# Open MPI needs a writable /tmp (session dir) and /dev/shm (vader shared memory).
mount -t tmpfs -o mode=1777 tmpfs "$NEW/tmp"
mount -t tmpfs -o mode=1777 tmpfs "$NEW/dev/shm"
mount -t tmpfs -o mode=0755 tmpfs "$NEW/run"
mount -o bind "$CTL" "$NEW/.rxe-vm/ctl"
mount -o bind /mnt/kernel "$NEW/.rxe-vm/kernel"
mount -o bind /mnt/out "$NEW/out"
# A working directory under /tmp or /run is hidden by the fresh tmpfs: bind it back
# (before the output share, which may lie inside it).
# So is any directory given with --share (':'-separated in SHARES).
bind_back() {
  if [ ! -d "$NEW$1" ] && [ -d "/mnt/host$1" ]; then
    mkdir -p "$NEW$1" || fail "mkdir $1"
    mount -o bind "/mnt/host$1" "$NEW$1" || fail "bind the host directory $1"
  fi
}
# Shares first (run.sh sorts them, parents first), then the working directory, which is
# then often inside one of them already.
old_ifs=$IFS
IFS=:
for dir in ${SHARES:-}; do
  IFS=$old_ifs
  bind_back "$dir"
done
IFS=$old_ifs
bind_back "$WORKDIR"

# The output share also at its host path, so a command may name it either way.
if [ -n "$OUT_HOST" ] && [ "$OUT_HOST" != /out ]; then
  mkdir -p "$NEW$OUT_HOST" 2>/dev/null
  mount -o bind /mnt/out "$NEW$OUT_HOST" || fail "bind the output share on $OUT_HOST"
fi

stage "loading soft-RoCE modules"
# A host program in the new root. Through env and its PATH search: busybox chroot
# would run its own applet of the same name (modprobe without -d, say).
in_root() {
  chroot "$NEW" /usr/bin/env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

hostname rxe-vm
ip link set lo up || fail "bring lo up"

# The kernel's own module autoload (request_module) runs /sbin/modprobe in the
# initramfs root, which is busybox: give it the module tree there.
mkdir -p /lib/modules
ln -s "/mnt/kernel/lib/modules/$(uname -r)" "/lib/modules/$(uname -r)"

# The host's kmod modprobe, on the Debian kernel's module tree (-a: several modules;
# without it the later names would be taken as module parameters). crc32_generic
# explicitly: where the kernel could not autoload it, rxe had no ICRC and "rdma link
# add" failed with "No such file or directory".
in_root modprobe -d /.rxe-vm/kernel -a \
  virtio_net crc32_generic ib_core ib_uverbs rdma_rxe rdma_ucm ||
  fail "modprobe virtio_net crc32_generic ib_core ib_uverbs rdma_rxe rdma_ucm"

# Rail K: the NIC whose MAC run.sh set to 52:54:00:4b:00:K, named ethK, address
# 10.0.K.15/24 (the qemu user-net default guest address in that subnet). The kernel
# names NICs in PCI order, which is the order run.sh added them; check by MAC anyway.
rail_dev_by_mac() {
  for d in /sys/class/net/*; do
    [ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && {
      echo "${d##*/}"
      return 0
    }
  done
  return 1
}
stage "naming the $RAILS rail NICs"
k=0
while [ "$k" -lt "$RAILS" ]; do
  mac=$(printf '52:54:00:4b:00:%02x' "$k")
  dev=$(rail_dev_by_mac "$mac") || fail "no NIC with MAC $mac for rail $k"
  if [ "$dev" != "eth$k" ]; then
    ip link set "$dev" name "rail$k" || fail "rename $dev"
  fi
  k=$((k + 1))
done
stage "addressing the rails and creating the rxe devices"
k=0
while [ "$k" -lt "$RAILS" ]; do
  [ -e "/sys/class/net/rail$k" ] && { ip link set "rail$k" name "eth$k" || fail "rename rail$k to eth$k"; }
  ip addr add "10.0.$k.15/24" dev "eth$k" || fail "address on eth$k"
  ip link set "eth$k" up || fail "bring eth$k up"
  in_root rdma link add "rxe$k" type rxe netdev "eth$k" || fail "rdma link add rxe$k type rxe netdev eth$k"
  k=$((k + 1))
done

stage "waiting for every rxe port to be ACTIVE"
# Every rxe port ACTIVE before the command starts (usually at once; allow 30 s).
k=0
tries=0
while [ "$k" -lt "$RAILS" ]; do
  state=$(cat "/sys/class/infiniband/rxe$k/ports/1/state" 2>/dev/null)
  case "$state" in
    *ACTIVE*) k=$((k + 1)) ;;
    *)
      tries=$((tries + 1))
      [ "$tries" -gt 300 ] && fail "rxe$k port not ACTIVE (state: ${state:-none})"
      sleep 0.1
      ;;
  esac
done

# Output written straight to the serial console: no \n -> \r\n translation, so the
# host sees the command's bytes unchanged.
stty -F /dev/console -onlcr 2>/dev/null
stage "command started"
: >"$CTL/started"
in_root bash /.rxe-vm/ctl/cmd.sh </dev/null
rc=$?
echo "$rc" >"$CTL/rc.tmp" && mv "$CTL/rc.tmp" "$CTL/rc"
power_off

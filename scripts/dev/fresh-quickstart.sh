#!/usr/bin/env bash
# The newcomer's first run, timed: a fresh Debian 12 root (debootstrap --variant=minbase),
# this repository cloned into it, and scripts/quickstart.sh run there as root, as on a
# new machine. Root only; needs debootstrap and a Debian mirror.
#   scripts/dev/fresh-quickstart.sh [DIR]      (default: a new folder under /tmp; removed after)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $(id -u) -eq 0 ]] || { echo "fresh-quickstart: run as root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "fresh-quickstart: apt-get install debootstrap first" >&2; exit 2; }
keep=${1:+yes}
dir=${1:-$(mktemp -d /tmp/fresh-debian.XXXXXX)}
mounted=()
cleanup() {
  local m
  for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done
  [[ -n $keep ]] || rm -rf --one-file-system "$dir"
}
trap cleanup EXIT
start=$SECONDS
debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian >"$dir.debootstrap.log" 2>&1 ||
  { echo "fresh-quickstart: debootstrap failed: $dir.debootstrap.log" >&2; exit 1; }
echo "fresh-quickstart: Debian 12 minbase in $dir after $((SECONDS - start)) s"
git clone -q "$root" "$dir/root/railbench"
mount -t proc proc "$dir/proc" && mounted=("$dir/proc" "${mounted[@]}")
mount --rbind /sys "$dir/sys" && mounted=("$dir/sys" "${mounted[@]}")
mount --rbind /dev "$dir/dev" && mounted=("$dir/dev" "${mounted[@]}")
mount -t tmpfs shm "$dir/dev/shm" && mounted=("$dir/dev/shm" "${mounted[@]}")
cp /etc/resolv.conf "$dir/etc/resolv.conf"
echo "fresh-quickstart: scripts/quickstart.sh in the fresh root (its output follows)"
/usr/bin/time -f "fresh-quickstart: quickstart.sh took %e s wall, %U s user + %S s system CPU" \
  chroot "$dir" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
  bash -c 'cd /root/railbench && scripts/quickstart.sh' </dev/null

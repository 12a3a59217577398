#!/usr/bin/env bash
# Runs one command inside a throwaway qemu VM that has soft-RoCE: one rxe device per
# rail (rxe0..rxeN-1 on eth0..ethN-1), the host's root read-only, a writable output
# share on /out, the same working directory and the relevant environment. Passes back
# the command's output (live, on stdout) and its exit code. For hosts whose own kernel
# has no RDMA: the VM boots Debian's kernel, fetched once with apt and cached.
# See README.md beside this file.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly here
readonly init_template=$here/init.sh
# What the initramfs loads to reach its 9p shares, in the order that works (each
# module's own dependencies are put before it by modprobe --show-depends).
readonly initrd_modules=(virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev
  virtio_pci netfs fscache 9pnet 9pnet_virtio 9p)
# Host variables the command sees inside (besides --env): names, then prefixes.
readonly pass_names=(PATH LANG TZ LD_LIBRARY_PATH ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS)
readonly pass_prefixes=(LC_ RAILBENCH_ OMPI_ PMIX_ PRTE_ FI_ RDMAV_ IBV_ UCX_ NCCL_ GTEST_)
readonly exit_timeout=124 exit_vm_failed=125

rails=1 out_dir="" mem=2G smp=2 timeout=1800 boot_timeout=120 verbose=0
extra_env=() command_args=() shares=()
ctl="" qemu_pid="" lock_fd=""

msg() { echo "rxe-vm: $*" >&2; }
die() {
  msg "$*"
  exit "$exit_vm_failed"
}

usage() {
  cat <<'EOF'
usage: scripts/rxe-vm/run.sh [options] -- COMMAND [ARGS...]
Runs COMMAND as root in a throwaway qemu VM with soft-RoCE devices rxe0..rxeN-1.
  --rails N             NICs and rxe devices (default 1; rail K is ethK, 10.0.K.15/24)
  --out DIR             host directory shared writable as /out (default: a new temp dir, kept)
  --mem SIZE            guest memory (default 2G)
  --smp N               guest CPUs (default 2)
  --timeout SECONDS     limit for the command itself (default 1800)
  --boot-timeout SEC    limit from qemu start to the command start (default 120)
  --env NAME[=VALUE]    pass one more variable (repeatable)
  --share DIR           make a host directory under /tmp, /run or /dev/shm visible at
                        its own path (the working directory always is; repeatable)
  -v, --verbose         show kernel messages and trace the guest init
Exit code: the command's; 124 on a timeout; 125 when the VM could not run it.
EOF
}

# need_int NAME VALUE MIN MAX: the option's value is a whole number in range.
need_int() {
  if [[ ! $2 =~ ^[0-9]+$ ]] || (($2 < $3 || $2 > $4)); then
    msg "$1 wants a whole number from $3 to $4, got '$2'"
    exit 2
  fi
}

parse_args() {
  while (($#)); do
    case $1 in
      --rails) rails=${2-}; shift ;;
      --out) out_dir=${2-}; shift ;;
      --mem) mem=${2-}; shift ;;
      --smp) smp=${2-}; shift ;;
      --timeout) timeout=${2-}; shift ;;
      --boot-timeout) boot_timeout=${2-}; shift ;;
      --env) extra_env+=("${2-}"); shift ;;
      --share) shares+=("${2-}"); shift ;;
      -v | --verbose) verbose=1 ;;
      -h | --help) usage; exit 0 ;;
      --) shift; command_args=("$@"); break ;;
      *) msg "unknown option '$1' (the command goes after --)"; usage >&2; exit 2 ;;
    esac
    shift || { msg "option needs a value"; exit 2; }
  done
  ((${#command_args[@]})) || { usage >&2; exit 2; }
  # 16 rails fit the emulated PCI bus beside the four 9p shares with room to spare.
  need_int --rails "$rails" 1 16
  need_int --smp "$smp" 1 64
  need_int --timeout "$timeout" 1 604800
  need_int --boot-timeout "$boot_timeout" 1 86400
  [[ $mem =~ ^[0-9]+[MGmg]?$ ]] || { msg "--mem wants a size like 2G or 1536M, got '$mem'"; exit 2; }
}

# Everything the VM needs from the host, checked up front so a missing piece is one
# clear line instead of a failure halfway through.
check_host() {
  (($(id -u) == 0)) ||
    die "must run as root (the guest reads the host root and writes the output share): sudo $0 ..."
  local -A pkg_of=([qemu-system-x86_64]=qemu-system-x86 [busybox]=busybox-static [cpio]=cpio
    [depmod]=kmod [modprobe]=kmod [flock]=util-linux [apt-get]=apt [dpkg-deb]=dpkg)
  local tool missing=()
  for tool in "${!pkg_of[@]}"; do
    command -v "$tool" >/dev/null || missing+=("$tool (${pkg_of[$tool]})")
  done
  ((${#missing[@]} == 0)) || die "missing ${missing[*]}: run scripts/install-deps.sh"
  # The busybox of package "busybox" is dynamic and cannot run in the initramfs.
  if ldd "$(command -v busybox)" >/dev/null 2>&1; then
    die "busybox is not the static build: run scripts/install-deps.sh (package busybox-static)"
  fi
  [[ -r $init_template ]] || die "missing $init_template"
}

# KVM only where the CPU shows vmx/svm: here /dev/kvm exists without them, and a
# KVM boot then hangs. TCG boots in about 10 s.
accel_args() {
  if grep -qwE 'vmx|svm' /proc/cpuinfo && [[ -r /dev/kvm && -w /dev/kvm ]]; then
    echo "-accel kvm -cpu host"
  else
    echo "-accel tcg,thread=multi -cpu max"
  fi
}

apt_update() {
  msg "apt-get update (package lists missing or stale)"
  apt-get update -qq >&2 || true
}

# The image package linux-image-amd64 points at now, e.g. linux-image-6.1.0-56-amd64.
# apt-cache takes 1.5 s here, so the answer is kept until the package lists change.
kernel_package() {
  local memo=$cache_root/kernel-package lists=/var/lib/apt/lists
  if [[ -s $memo && $memo -nt $lists ]]; then
    cat "$memo"
    return 0
  fi
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
    awk '$1 == "Depends:" { gsub(/[<>]/, "", $2); if ($2 ~ /^linux-image-[0-9]/) { print $2; exit } }') || true
  [[ -z $pkg ]] || echo "$pkg" | tee "$memo"
}

# Sets kernel_version and kernel_dir; downloads and extracts the kernel package
# unless the cache has it. Caller holds the cache lock.
ensure_kernel() {
  local pkg
  pkg=$(kernel_package)
  if [[ -z $pkg ]]; then
    apt_update
    pkg=$(kernel_package)
  fi
  if [[ -z $pkg ]]; then
    # Offline with no package lists: any kernel already in the cache will do.
    local done_mark
    done_mark=$(find "$cache_root" -mindepth 2 -maxdepth 2 -name .extracted 2>/dev/null | sort -V | tail -n 1)
    [[ -n $done_mark ]] ||
      die "apt-cache knows no linux-image-amd64 even after apt-get update: check the Debian mirror (apt-get update), then rerun"
    pkg=linux-image-$(basename "$(dirname "$done_mark")")
  fi
  kernel_version=${pkg#linux-image-}
  kernel_dir=$cache_root/$kernel_version
  [[ -e $kernel_dir/.extracted ]] && return 0

  msg "fetching $pkg once (cached in $kernel_dir)"
  local tmp
  tmp=$(mktemp -d "$cache_root/download.XXXXXX")
  # APT::Sandbox::User=root: the _apt user cannot enter root's home, where the cache is.
  if ! (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg" >&2); then
    apt_update
    (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg" >&2) || {
      rm -rf "$tmp"
      die "apt-get download $pkg failed: run scripts/install-deps.sh and check that the Debian mirror is reachable (apt-get update)"
    }
  fi
  dpkg-deb -x "$tmp"/*.deb "$tmp/root" || { rm -rf "$tmp"; die "dpkg-deb -x of $pkg failed (disk full?)"; }
  depmod -b "$tmp/root" "$kernel_version"
  [[ -f $tmp/root/boot/vmlinuz-$kernel_version ]] || { rm -rf "$tmp"; die "$pkg has no boot/vmlinuz-$kernel_version"; }
  mkdir -p "$kernel_dir"
  rm -rf "$kernel_dir/root"
  mv "$tmp/root" "$kernel_dir/root"
  rm -rf "$tmp"
  touch "$kernel_dir/.extracted"
}

# copy_module SRC DEST: a module as plain .ko; busybox insmod reads no compressed ones.
copy_module() {
  case $1 in
    *.ko.xz) xz -dc "$1" >"$2" ;;
    *.ko.zst) zstd -qdc "$1" >"$2" ;;
    *.ko.gz) gzip -dc "$1" >"$2" ;;
    *) cp "$1" "$2" ;;
  esac
}

# Sets initrd; builds it unless the cache has one for this init, script, kernel and
# busybox.
# Caller holds the cache lock.
ensure_initrd() {
  local busybox key
  busybox=$(command -v busybox)
  # Keyed by everything that goes into it, this script included (it builds it).
  key=$({
    cat "$init_template" "${BASH_SOURCE[0]}"
    echo "${initrd_modules[*]} $kernel_version"
    sha256sum "$busybox"
  } | sha256sum | cut -c1-16)
  initrd=$kernel_dir/initrd-$key.cpio
  [[ -e $initrd ]] && return 0

  local stage line ko name
  stage=$(mktemp -d "$cache_root/initrd.XXXXXX")
  mkdir -p "$stage/bin" "$stage/dev" "$stage/lib/rxe-vm"
  cp "$busybox" "$stage/bin/busybox"
  install -m 0755 "$init_template" "$stage/init"
  mknod "$stage/dev/console" c 5 1
  : >"$stage/lib/rxe-vm/order"
  local -A seen=()
  for name in "${initrd_modules[@]}"; do
    local deps
    deps=$(modprobe -d "$kernel_dir/root" -S "$kernel_version" --show-depends "$name") || {
      rm -rf "$stage"
      die "module $name not found in $kernel_dir/root"
    }
    while read -r line; do
      # "insmod /path/x.ko [params]" or "builtin x" (nothing to load).
      [[ $line == insmod\ * ]] || continue
      ko=$(awk '{ print $2 }' <<<"$line")
      [[ -z ${seen[$ko]-} ]] || continue
      seen[$ko]=1
      local plain
      plain=$(basename "$ko")
      plain=${plain%.xz}
      plain=${plain%.zst}
      plain=${plain%.gz}
      copy_module "$ko" "$stage/lib/rxe-vm/$plain"
      echo "$plain" >>"$stage/lib/rxe-vm/order"
    done <<<"$deps"
  done
  (cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$stage.cpio"
  # Older initramfs images are stale: qemu copies its -initrd into guest memory at
  # start, so even a VM booted from one a moment ago no longer needs the file.
  rm -f "$kernel_dir"/initrd-*.cpio
  mv "$stage.cpio" "$initrd"
  rm -rf "$stage"
}

# Sets boot_kernel: an uncompressed ELF vmlinux when it can be cut out of the bzImage
# (qemu boots it through its PVH entry, skipping the in-guest xz decompression that
# takes about 5 s under TCG), else the bzImage itself. Caller holds the cache lock.
ensure_vmlinux() {
  local vmlinuz=$kernel_dir/root/boot/vmlinuz-$kernel_version
  local vmlinux=$kernel_dir/vmlinux
  boot_kernel=$vmlinuz
  if [[ -s $vmlinux ]]; then
    boot_kernel=$vmlinux
    return 0
  fi
  [[ -e $kernel_dir/.no-vmlinux ]] && return 0
  command -v xz >/dev/null || return 0
  local offset
  # The xz stream starts at its magic; xz complains about the bytes after it, so its
  # status says nothing and the ELF header is checked instead.
  offset=$(LC_ALL=C grep -abo $'\xfd7zXZ\x00' "$vmlinuz" | head -n 1 | cut -d: -f1) || true
  if [[ -n $offset ]]; then
    tail -c +$((offset + 1)) "$vmlinuz" | xz -dcq >"$vmlinux.tmp" 2>/dev/null || true
  fi
  if [[ -s $vmlinux.tmp ]] && [[ $(head -c 4 "$vmlinux.tmp") == $'\x7fELF' ]] &&
    LC_ALL=C grep -aq 'Xen' "$vmlinux.tmp"; then
    mv "$vmlinux.tmp" "$vmlinux"
    boot_kernel=$vmlinux
  else
    rm -f "$vmlinux.tmp"
    touch "$kernel_dir/.no-vmlinux"
  fi
}

# Kernel and initramfs, made once and shared: ctest may start two VMs at once, so
# one run builds while the other waits on the lock.
prepare_cache() {
  cache_root=${RAILBENCH_CACHE:-${HOME:-/root}/.cache/railbench}/rxe-vm
  mkdir -p "$cache_root"
  exec {lock_fd}>"$cache_root/lock"
  flock -w 900 "$lock_fd" || die "waited 900 s for the cache lock $cache_root/lock; is another run stuck?"
  ensure_kernel
  ensure_initrd
  ensure_vmlinux
  exec {lock_fd}>&-
  lock_fd=""
}

# sh_quote VALUE: VALUE as one single-quoted word for the guest's busybox sh.
sh_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

passes_through() {
  local name=$1 p
  for p in "${pass_names[@]}"; do [[ $name == "$p" ]] && return 0; done
  for p in "${pass_prefixes[@]}"; do [[ $name == "$p"* ]] && return 0; done
  return 1
}

# The guest runs ctl/cmd.sh with the host's bash: environment, cwd, then the command,
# each word quoted with %q so no shell ever re-splits it.
write_command_script() {
  local name host_tty=0
  [[ -t 1 ]] && host_tty=1
  {
    echo '#!/bin/bash'
    echo '# Written by scripts/rxe-vm/run.sh.'
    while read -r name; do
      passes_through "$name" && printf 'export %s=%q\n' "$name" "${!name}"
    done < <(compgen -e)
    local item
    for item in "${extra_env[@]}"; do
      if [[ $item == *=* ]]; then
        printf 'export %s=%q\n' "${item%%=*}" "${item#*=}"
      else
        printf 'export %s=%q\n' "$item" "${!item-}"
      fi
    done
    # A python3 on PATH that is a version manager's shim (pyenv, asdf) is a shell script
    # that starts a dozen processes; under TCG that is 9 s a start against 1-2 s for the
    # interpreter itself, and the cases start one per check. The guest finds python3
    # first in a folder of its own that links the interpreter the host's python3
    # resolves to: the same one, without the shim.
    local py
    if py=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null) && [[ -x $py ]]; then
      printf 'mkdir -p /tmp/.rxe-vm-bin && ln -sf %q /tmp/.rxe-vm-bin/python3\n' "$py"
      echo 'export PATH=/tmp/.rxe-vm-bin:$PATH'
    fi
    # The root is read-only inside: home and temp on the guest's tmpfs.
    echo 'export HOME=/tmp TMPDIR=/tmp RXE_VM_OUT=/out'
    # Output goes to a serial console: a terminal only if the host's stdout is one.
    if ((host_tty)); then printf 'export TERM=%q\n' "${TERM:-vt100}"; else echo 'export TERM=dumb'; fi
    # Everything runs as root in the guest; mpirun refuses that unless told.
    # shellcheck disable=SC2016 # expanded by the guest's bash, after the host's values
    printf 'export %s=${%s:-1}\n' OMPI_ALLOW_RUN_AS_ROOT{,} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM{,}
    # With rxe devices present Open MPI's default pml is ucx, whose start-up probes
    # them and took 40 s under TCG (ob1: 4 s); openib only prints warnings on rxe.
    # Defaults only: the host's OMPI_MCA_* and mpirun's --mca still win.
    # shellcheck disable=SC2016
    printf 'export %s=${%s:-%s}\n' OMPI_MCA_pml{,} ob1 OMPI_MCA_btl{,} '^openib'
    printf 'cd -- %q || exit %d\n' "$PWD" "$exit_vm_failed"
    printf 'exec'
    printf ' %q' "${command_args[@]}"
    echo
  } >"$ctl/cmd.sh"
  {
    echo "RAILS=$rails"
    echo "WORKDIR=$(sh_quote "$PWD")"
    # Absolute, ':'-separated: the guest's fresh tmpfs on /tmp and /run hides these.
    # Sorted, so a parent is bound before the directories inside it.
    local joined="" d
    local -a abs=()
    for d in "${shares[@]}"; do
      [[ -d $d ]] || die "--share $d: no such directory"
      abs+=("$(cd "$d" && pwd)")
    done
    if ((${#abs[@]})); then
      while IFS= read -r d; do joined+="${joined:+:}$d"; done < <(printf '%s\n' "${abs[@]}" | LC_ALL=C sort -u)
    fi
    echo "SHARES=$(sh_quote "$joined")"
    echo "OUT_HOST=$(sh_quote "$out_dir")"
  } >"$ctl/vm.conf"
}

setup_dirs() {
  ctl=$(mktemp -d "${TMPDIR:-/tmp}/rxe-vm-ctl.XXXXXX")
  if [[ -z $out_dir ]]; then
    out_dir=$(mktemp -d "${TMPDIR:-/tmp}/rxe-vm-out.XXXXXX")
    msg "output share /out is $out_dir (kept)"
  else
    mkdir -p "$out_dir"
  fi
  out_dir=$(cd "$out_dir" && pwd -P)
}

# qemu wants a literal comma doubled inside an option value.
qemu_escape() { printf '%s' "${1//,/,,}"; }

build_qemu_args() {
  local append="console=ttyS0 panic=-1"
  if ((verbose)); then append+=" loglevel=7 rxe_vm.verbose"; else append+=" quiet loglevel=1"; fi
  # acpi=noirq: PCI interrupt routing without ACPI. With it, enabling the four ACPI
  # interrupt links took about 1.5 s of emulated AML at the first virtio device.
  append+=" acpi=noirq"
  # RXE_VM_APPEND: extra kernel parameters, for debugging the VM itself.
  append+=${RXE_VM_APPEND:+ $RXE_VM_APPEND}
  # shellcheck disable=SC2207 # accel_args prints plain words
  qemu_args=($(accel_args))
  qemu_args+=(-m "$mem" -smp "$smp" -nodefaults -no-user-config -display none -no-reboot
    -chardev "stdio,id=console,logfile=$(qemu_escape "$ctl/console.log")" -serial chardev:console
    -kernel "$boot_kernel" -initrd "$initrd" -append "$append")
  add_share ctl "$ctl" ""
  # multidevs=remap: the host root spans several filesystems; without it 9p warns of
  # file-ID collisions.
  add_share hostroot / ",readonly=on,multidevs=remap"
  add_share kernel "$kernel_dir/root" ",readonly=on"
  add_share out "$out_dir" ""
  local k
  for ((k = 0; k < rails; k++)); do
    # One subnet per rail; restrict=on keeps every packet inside the VM (no host, no
    # outside), and the fixed MAC lets the guest name the NIC of rail K ethK.
    qemu_args+=(-nic "user,model=virtio-net-pci,net=10.0.$k.0/24,restrict=on,mac=$(printf '52:54:00:4b:00:%02x' "$k")")
  done
}

add_share() {
  qemu_args+=(-fsdev "local,id=fs_$1,path=$(qemu_escape "$2"),security_model=none$3"
    -device "virtio-9p-pci,fsdev=fs_$1,mount_tag=$1")
}

now_us() { echo "${EPOCHREALTIME//[!0-9]/}"; }
seconds() { printf '%d.%d' $(($1 / 1000000)) $(($1 % 1000000 / 100000)); }

last_console_lines() {
  if [[ -s $ctl/qemu.stderr ]]; then
    { grep -v 'terminating on signal' "$ctl/qemu.stderr" || true; } | sed 's/^/  qemu: /'
  fi
  if [[ -s $ctl/console.log ]]; then
    tr -d '\r' <"$ctl/console.log" | grep -v '^[[:space:]]*$' | tail -n 15 | sed 's/^/  | /'
  else
    echo "  (the guest printed nothing)"
  fi
}

# Where the guest init got to, for a message that names what did not come up.
guest_stage() {
  if [[ -s $ctl/stage ]]; then cat "$ctl/stage"; else echo "kernel boot and initramfs (the control share was never mounted)"; fi
}

stop_qemu() {
  [[ -n $qemu_pid ]] || return 0
  if kill -0 "$qemu_pid" 2>/dev/null; then
    kill "$qemu_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do
      kill -0 "$qemu_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$qemu_pid" 2>/dev/null || true
  fi
  wait "$qemu_pid" 2>/dev/null || true
  qemu_pid=""
}

# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
  stop_qemu
  [[ -z $ctl ]] || rm -rf "$ctl"
}

# Watches the running VM: the boot deadline until the guest says "started", then the
# command deadline. Sets started_us.
watch_vm() {
  local t0 now
  t0=$(now_us)
  now=$t0
  started_us=""
  while kill -0 "$qemu_pid" 2>/dev/null; do
    now=$(now_us)
    if [[ -z $started_us ]]; then
      if [[ -e $ctl/started ]]; then
        started_us=$now
        msg "guest ready after $(seconds $((now - t0))) s, running: ${command_args[*]}"
      elif ((now - t0 >= boot_timeout * 1000000)); then
        stop_qemu
        msg "guest did not start the command within $boot_timeout s (stuck at: $(guest_stage)); last console lines:"
        last_console_lines >&2
        exit "$exit_timeout"
      fi
    elif ((now - started_us >= timeout * 1000000)); then
      stop_qemu
      msg "command did not finish within $timeout s (--timeout); VM killed"
      exit "$exit_timeout"
    fi
    sleep 0.1
  done
  boot_us=$((${started_us:-$now} - t0))
  total_us=$(($(now_us) - t0))
}

main() {
  parse_args "$@"
  check_host
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  prepare_cache
  setup_dirs
  write_command_script
  build_qemu_args
  ((verbose)) && msg "qemu-system-x86_64 ${qemu_args[*]}"
  # stdin /dev/null: qemu leaves the terminal alone and nothing waits for input.
  # Its stderr goes to a file, shown when the run fails: on success it holds only
  # noise like "terminating on signal 15".
  qemu-system-x86_64 "${qemu_args[@]}" </dev/null 2>"$ctl/qemu.stderr" &
  qemu_pid=$!
  watch_vm
  local qemu_rc=0
  wait "$qemu_pid" || qemu_rc=$?
  qemu_pid=""
  if [[ -s $ctl/rc ]]; then
    local rc
    rc=$(<"$ctl/rc")
    msg "command exited $rc (boot $(seconds "$boot_us") s, total $(seconds "$total_us") s)"
    exit "$rc"
  elif [[ -e $ctl/setup-failed ]]; then
    msg "guest setup failed at: $(<"$ctl/setup-failed"); kernel log tail:"
    tail -n 15 "$ctl/dmesg.txt" 2>/dev/null | sed 's/^/  | /' >&2 || true
    exit "$exit_vm_failed"
  else
    msg "qemu exited (status $qemu_rc) before the command finished (reached: $(guest_stage)); last console lines:"
    last_console_lines >&2
    exit "$exit_vm_failed"
  fi
}

main "$@"

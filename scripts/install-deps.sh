#!/usr/bin/env bash
# Installs every Debian package railbench needs to build, test and benchmark.
# Idempotent: packages already present are left alone, and apt-get runs only when
# something is missing, so repeated runs (quickstart, test.sh, CI) cost a second.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git clang-format
  libfabric-dev libfabric-bin
  libucx-dev ucx-utils
  libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils rdma-core perftest
  openmpi-bin libopenmpi-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev catch2
  python3 iproute2 procps
)
# The install test: cpack's DEB generator (dpkg-shlibdeps for Depends, file to find the
# binaries) and mount (a tmpfs over the source tree's configs/).
packages+=(dpkg-dev file mount)
# The local Slurm cluster of the slurm tests (scripts/slurm-local: slurmctld, slurmd,
# srun/sbatch, munge; the pmix plugin is in slurm-wlm-basic-plugins) and the k8s
# manifest check (python3-yaml).
packages+=(slurm-wlm munge python3-yaml)
# lib/hostlist's oracle test and the drain list's README commands: ClusterShell's nodeset.
packages+=(clustershell python3-clustershell)
# The report tests open every generated page in headless Chromium (tests/report: ~23
# packages, ~390 MB installed, about 40 s on a fresh Debian 12).
packages+=(chromium)
# The soft-RoCE VM test bed (scripts/rxe-vm) needs these too.
packages+=(qemu-system-x86 busybox-static cpio kmod xz-utils)
# The progress-line tests run railbench on a real terminal: a tmux pane.
packages+=(tmux)
# The export test checks every metrics file with Prometheus' promtool.
packages+=(prometheus)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || {
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  }
  sudo="sudo"
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null

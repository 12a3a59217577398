#!/usr/bin/env bash
# Installs the Debian packages railbench needs for one purpose:
#   scripts/install-deps.sh [--for run|build|deb|test|all]     (default: all)
#   run    what running a built railbench needs: Open MPI's mpirun, the NICs' user-space
#          drivers, the transports' libraries
#   build  run, plus the compiler, CMake, Ninja, the transports' headers and GLPK's
#          (quickstart.sh)
#   deb    build, plus what cpack's DEB generator uses (dpkg-shlibdeps, file): the .deb's build
#   test   build, plus what only the test suite uses: Catch2, clang-format, the soft-RoCE VM
#          (QEMU), the local Slurm, headless Chromium, Prometheus' promtool, perftest, ...
#   all    test (today the same set; scripts/test.sh and CI take it)
# Idempotent: packages already present are left alone, and apt-get runs only when
# something is missing, so repeated runs cost a second.
set -euo pipefail

usage() { echo "usage: scripts/install-deps.sh [--for run|build|deb|test|all]" >&2; }
purpose=all
while (($#)); do
  case $1 in
    --for)
      (($# >= 2)) || { usage; exit 2; }
      purpose=$2
      shift 2
      ;;
    --for=*) purpose=${1#--for=}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install-deps: unknown argument '$1'" >&2; usage; exit 2 ;;
  esac
done
case $purpose in
  run | build | deb | test | all) ;;
  *) echo "install-deps: --for '$purpose' is not one of run, build, deb, test, all" >&2; exit 2 ;;
esac

# run: mpirun launches the ranks; libfabric's, UCX's and verbs' libraries with the NICs'
# providers (mlx5, efa, rxe, ...); fi_info for `railbench info`'s provider list; GLPK,
# the solver of validate's fabric localization; SQLite and libpq, the run store's engines;
# zlib, for gzip-compressed Chakra traces.
packages=(openmpi-bin libfabric1 libfabric-bin libucx0 libibverbs1 librdmacm1 ibverbs-providers
  libfmt9 libglpk40 libsqlite3-0 libpq5 zlib1g python3 iproute2 procps)
if [[ $purpose != run ]]; then
  packages+=(build-essential cmake ninja-build pkg-config git
    libfabric-dev libucx-dev libibverbs-dev librdmacm-dev libopenmpi-dev
    libcli11-dev nlohmann-json3-dev libfmt-dev libglpk-dev libsqlite3-dev libpq-dev zlib1g-dev)
fi
if [[ $purpose != run && $purpose != build ]]; then
  # cpack's DEB generator: dpkg-shlibdeps for Depends, file to find the binaries; mount
  # for the install test (a tmpfs over the source tree's configs/).
  packages+=(dpkg-dev file mount)
fi
if [[ $purpose == test || $purpose == all ]]; then
  packages+=(catch2 clang-format)
  # The comparisons against peers: perftest (ib_*), ucx_perftest, rdma-core's tools.
  packages+=(ucx-utils ibverbs-utils rdma-core perftest)
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
  # The simulated multi-spine fabric's test and the flow probes' test: traceroute as the paths' oracle, nftables
  # for its lossy and blackholed links (scripts/netns-su/fault.sh).
  packages+=(traceroute nftables)
  # The run store's PostgreSQL test starts a throwaway server of its own (initdb, pg_ctl).
  packages+=(postgresql)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages for '$purpose' present"
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

echo "install-deps: installing for '$purpose': ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null

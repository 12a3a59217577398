#!/usr/bin/env bash
# The validate story on one machine: build a 4-node x 2-rail simulated SU, accept it,
# degrade one link to a quarter of its rate, validate again and see that exact link
# named, then tear everything down (also when a step fails). Needs root.
#   demo.sh [path/to/railbench]   (default: ${RAILBENCH_BUILD_DIR:-build}/railbench)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rb=${1:-${RAILBENCH_BUILD_DIR:-$root/build}/railbench}
export RB_SU_PREFIX=${RB_SU_PREFIX:-rbdemo}
export RB_SU_STATE="/run/railbench-netns-su/$RB_SU_PREFIX"
source "$here/lib.sh"
set +e
rb_su_require_root
[[ -x $rb ]] || rb_su_die "no railbench binary at $rb: build it first (scripts/build.sh)"
trap '"$here/down.sh" >/dev/null 2>&1' EXIT
"$here/down.sh" >/dev/null 2>&1

step() { printf '\n==== %s\n' "$*"; }
validate() {
  "$here/mpirun.sh" -- "$rb" validate --config netns-4x2 --json "$1" 2>&1 | grep -v '^--\|^ *$\|^Primary\|^mpirun detected\|^  Process\|^  Exit code\|job has been\|the job to be\|non-zero exit code'
}

step "1. build the SU: 4 nodes x 2 rails, every link 400 Mb/s (scripts/netns-su/up.sh)"
"$here/up.sh" --nodes 4 --rails 2 --rate 400 || exit 1
step "2. validate the healthy SU"
validate /tmp/railbench-demo-healthy.json
step "3. degrade node03's rail1 cable to 25% of its rate (scripts/netns-su/fault.sh)"
"$here/fault.sh" degrade node03 rail1 25
step "4. validate again: the finding names node03 rail1"
validate /tmp/railbench-demo-degraded.json
step "5. tear down (scripts/netns-su/down.sh)"
"$here/down.sh"
trap - EXIT
echo "results: /tmp/railbench-demo-healthy.json /tmp/railbench-demo-degraded.json"

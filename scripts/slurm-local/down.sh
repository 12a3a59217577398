#!/usr/bin/env bash
# Stops the throwaway cluster of up.sh and removes $RAILBENCH_SLURM_DIR (default
# /tmp/railbench-slurm) whole: its jobs are cancelled, its daemons (munged, slurmctld,
# every slurmd and slurmstepd) ended, TERM first and KILL after 10 s. Nothing running
# and nothing there: exit 0.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
dir=$RAILBENCH_SLURM_DIR
[[ $dir == /* && $dir != / ]] || rb_slurm_die "RAILBENCH_SLURM_DIR=$dir: use an absolute path other than /"

pids=$(rb_slurm_pids)
if [[ -z $pids && ! -e $dir ]]; then
  echo "slurm-local: not up ($dir): nothing to do"
  exit 0
fi

# Jobs first, so that their tasks end through Slurm (slurmstepd kills each step's
# processes) before the daemons that track them go.
if [[ -n $pids && -f $dir/slurm.conf ]]; then
  SLURM_CONF=$dir/slurm.conf timeout 10 scancel --quiet --full --user=root 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    jobs=$(SLURM_CONF=$dir/slurm.conf timeout 5 squeue -h -o %i 2>/dev/null || true)
    [[ -z $jobs ]] && break
    sleep 0.2
  done
fi

signal_all() {  # signal_all SIGNAL: signals every process of this cluster
  local p
  for p in $(rb_slurm_pids); do kill -s "$1" "$p" 2>/dev/null || true; done
}
wait_gone() {  # wait_gone TENTHS: 0 once no process of this cluster is left
  local i
  for ((i = 0; i < $1; i++)); do
    [[ -z $(rb_slurm_pids) ]] && return 0
    sleep 0.1
  done
  return 1
}
signal_all TERM
if ! wait_gone 100; then
  echo "slurm-local: daemons still running 10 s after TERM: killing them" >&2
  signal_all KILL
  wait_gone 50 || true
fi
left=$(rb_slurm_pids)
[[ -z $left ]] || rb_slurm_die "processes still running after KILL: $left"
# Only a directory up.sh made is removed whole (RAILBENCH_SLURM_DIR could name any path).
if [[ -e $dir && ! -f $dir/shape && -n $(ls -A "$dir") ]]; then
  rb_slurm_die "$dir was not made by up.sh (no $dir/shape): not removing it"
fi
rm -rf "$dir"
echo "slurm-local: down ($dir removed, $SECONDS s)"

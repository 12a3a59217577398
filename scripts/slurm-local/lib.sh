# Shared by up.sh, down.sh and the Slurm tests: where the throwaway cluster lives.
# Everything it makes (config, munge key and socket, state, spool, logs, pid files) is
# under $RAILBENCH_SLURM_DIR; nothing is written to /etc, /var or /run.
# shellcheck shell=bash

RAILBENCH_SLURM_DIR=${RAILBENCH_SLURM_DIR:-/tmp/railbench-slurm}
# slurmctld listens on this port, node N's slurmd on port + N.
RAILBENCH_SLURM_PORT=${RAILBENCH_SLURM_PORT:-16817}

rb_slurm_die() {
  echo "slurm-local: $*" >&2
  exit 1
}

# The processes this cluster started: slurmctld, slurmd, slurmstepd and munged whose
# environment, command line or working directory (slurmstepd clears its environment and
# works in the log directory) names this cluster's directory. Never another cluster's
# daemons (a system slurmd or munged reads /etc and has neither).
rb_slurm_pids() {
  local dir=$RAILBENCH_SLURM_DIR pid state
  # Candidates by process name (Debian's binaries are slurmctld-wlm etc. behind
  # alternatives links; the name is the link's), then only those that are this cluster's.
  # Zombies (state Z) are gone already: they wait for their parent to reap them.
  for pid in $(pgrep '^(slurmctld|slurmd|slurmstepd|munged|slurmscriptd)' 2>/dev/null); do
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || continue
    [[ -n $state && $state != Z ]] || continue
    if { tr '\0' '\n' <"/proc/$pid/environ" | grep -xF "RAILBENCH_SLURM_DIR=$dir" >/dev/null; } 2>/dev/null ||
      { tr '\0' ' ' <"/proc/$pid/cmdline" | grep -F "$dir/" >/dev/null; } 2>/dev/null ||
      [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$dir"/* ]]; then
      echo "$pid"
    fi
  done
}

# Sourced by scripts and tests: mpirun with the flags this kind of host needs.
# Usage: rb_mpirun NP [mpirun options...] -- command...
#   Adds --allow-run-as-root only as root and --oversubscribe only when NP exceeds the
#   cores; keeps Open MPI on its shared-memory and TCP paths over loopback so nothing
#   leaves the machine. stdin is /dev/null: CI has none, and mpirun would forward it.
#   RB_MPI_BTL replaces the BTL list (self,vader,tcp): self,tcp measures Open MPI over
#   TCP alone (a second --mca btl on the command line would not replace the first).
#   RB_MPI_BIND replaces --bind-to none (core: one rank a core, so two busy-polling ranks
#   are never left on one core while the other idles; NP must not exceed the cores).
rb_mpirun() {
  local np=$1
  shift
  local -a extra=()
  [[ $(id -u) -eq 0 ]] && extra+=(--allow-run-as-root)
  ((np > $(nproc))) && extra+=(--oversubscribe)
  mpirun -np "$np" "${extra[@]}" --bind-to "${RB_MPI_BIND:-none}" \
    --mca btl "${RB_MPI_BTL:-self,vader,tcp}" --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
    --mca pml ob1 "$@" </dev/null
}

# rb_mpirun_deadline SECONDS NP command...: rb_mpirun with a hard deadline (timeout, then
# SIGKILL 10 s later): for tests, where a job must never hang. Exit 124: the deadline.
rb_mpirun_deadline() {
  local deadline=$1 np=$2
  shift 2
  timeout --kill-after=10 "$deadline" bash -c "$(declare -f rb_mpirun); rb_mpirun $np $(printf '%q ' "$@")"
}

#!/usr/bin/env bash
# mpirun across the simulated SU: one rank per GPU slot, --slots (default: the number
# of rails) ranks on each node, control traffic on the management network only.
#   mpirun.sh [--slots S] [--nodes node01,node02,...] [mpirun options] -- command...
# The command runs inside the nodes' namespaces; rank order is node-major (node01
# slots 0..S-1, then node02, ...), as --map-by ppr:S:node gives on a real cluster.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
rb_su_require_root
rb_su_load_state
slots=$RB_SU_RAILS nodes=""
declare -a extra=()
while (($#)) && [[ $1 != -- ]]; do
  case $1 in
    --slots) slots=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
[[ ${1:-} == -- ]] && shift
(($#)) || rb_su_die "no command: mpirun.sh [--slots S] [--nodes LIST] -- command..."
if [[ -z $nodes ]]; then
  for ((n = 1; n <= RB_SU_NODES; n++)); do nodes+="${nodes:+,}$(rb_su_node_name $n)"; done
fi
hostfile=$(mktemp)
trap 'rm -f "$hostfile"' EXIT
count=0
for node in ${nodes//,/ }; do
  rb_su_node_number "$node" >/dev/null
  echo "$node slots=$slots" >>"$hostfile"
  count=$((count + 1))
done
np=$((count * slots))
declare -a envs=(-x PATH)
for var in LD_LIBRARY_PATH FI_PROVIDER FI_LOG_LEVEL RAILBENCH_RANKS_PER_NODE; do
  [[ -n ${!var:-} ]] && envs+=(-x "$var")
done
# Ranks of a node run in its namespace; ranks on other nodes reach them over TCP on the
# management subnet (Open MPI's own traffic), never on the rails being measured.
mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" --hostfile "$hostfile" \
  --map-by "ppr:$slots:node" \
  --mca plm_rsh_agent "$here/rsh-agent" --mca plm_rsh_no_tree_spawn 1 \
  --mca oob_tcp_if_include "$RB_SU_MGMT_NET.0/24" --mca btl self,vader,tcp \
  --mca btl_tcp_if_include "$RB_SU_MGMT_NET.0/24" --mca pml ob1 \
  "${envs[@]}" "${extra[@]}" "$@" </dev/null

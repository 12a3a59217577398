#!/usr/bin/env bash
# Starts a throwaway Slurm cluster on this host: its own munged, a slurmctld and one
# slurmd per simulated node (Debian's slurm-wlm runs several slurmd on one host, each
# with -N NAME and its own port). The nodes are named after loopback addresses,
# 127.0.0.[1-N], so a step's node list resolves with no DNS or /etc/hosts entry.
#   up.sh [--nodes N] [--cpus C] [--timeout SECONDS]
# Defaults: 4 nodes of 8 CPUs each (more than the host has: oversubscribed on purpose),
# 60 s for the nodes to come up. Everything lives under $RAILBENCH_SLURM_DIR (default
# /tmp/railbench-slurm); use the cluster with `source $RAILBENCH_SLURM_DIR/env`.
# Already up with the same shape: left as it is. Up with another shape, or half up:
# stopped (down.sh) and started anew. On failure: the daemons' logs, then down.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

nodes=4 cpus=8 timeout=60
while (($#)); do
  case $1 in
    --nodes | --cpus | --timeout) printf -v "${1#--}" '%s' "$2"; shift 2 ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) rb_slurm_die "unknown option '$1': use --nodes N --cpus C --timeout SECONDS" ;;
  esac
done
if ! [[ $nodes =~ ^[0-9]+$ ]] || ((nodes < 1 || nodes > 64)); then rb_slurm_die "--nodes $nodes: use 1..64"; fi
if ! [[ $cpus =~ ^[0-9]+$ ]] || ((cpus < 1 || cpus > 256)); then rb_slurm_die "--cpus $cpus: use 1..256"; fi
if ! [[ $timeout =~ ^[0-9]+$ ]] || ((timeout < 1)); then
  rb_slurm_die "--timeout $timeout: a whole number of seconds"
fi
[[ $(id -u) -eq 0 ]] || rb_slurm_die "needs root: slurmd starts job steps as their user, which only root can do"
for cmd in munged mungekey slurmctld slurmd srun sinfo scontrol; do
  command -v "$cmd" >/dev/null ||
    rb_slurm_die "'$cmd' not found: install slurm-wlm and munge (scripts/install-deps.sh does)"
done
[[ $RAILBENCH_SLURM_DIR == /* ]] || rb_slurm_die "RAILBENCH_SLURM_DIR=$RAILBENCH_SLURM_DIR: use an absolute path"

dir=$RAILBENCH_SLURM_DIR
conf=$dir/slurm.conf
socket=$dir/munge/munge.socket
# A unix socket path has room for 107 bytes.
((${#socket} <= 100)) || rb_slurm_die "RAILBENCH_SLURM_DIR=$dir is too long for munge's socket path: use a shorter one"
shape="nodes=$nodes cpus=$cpus port=$RAILBENCH_SLURM_PORT"

# Already up? Reuse it when its shape is the one asked for, every daemon of its pid
# files runs, and every node answers idle.
all_running() {
  local f n
  local -a files=("$dir/munge/munged.pid" "$dir/run/slurmctld.pid")
  for ((n = 1; n <= nodes; n++)); do files+=("$dir/run/slurmd-127.0.0.$n.pid"); done
  for f in "${files[@]}"; do
    [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null || return 1
  done
}
if [[ -f $dir/shape && $(cat "$dir/shape") == "$shape" ]] && all_running &&
  SLURM_CONF=$conf timeout 10 sinfo -h -o '%T %D' 2>/dev/null | grep -x "idle $nodes" >/dev/null; then
  echo "slurm-local: already up ($shape, $dir): reusing it"
  exit 0
fi
if [[ -e $dir ]]; then
  echo "slurm-local: $dir holds another or a half-started cluster: stopping it first"
  "$here/down.sh"
fi

last_port=$((RAILBENCH_SLURM_PORT + nodes))
busy=$(ss -Hltn "( sport >= :$RAILBENCH_SLURM_PORT and sport <= :$last_port )" 2>/dev/null || true)
if [[ -n $busy ]]; then
  rb_slurm_die "a port in $RAILBENCH_SLURM_PORT..$last_port is in use (another cluster?):" \
    "set RAILBENCH_SLURM_PORT to another base port"
fi

show_logs() {
  local f
  for f in "$dir"/munge/munged.log "$dir"/log/*.log; do
    [[ -f $f ]] || continue
    echo "----- $f (last 40 lines)" >&2
    tail -n 40 "$f" >&2
  done
}
fail() {
  echo "slurm-local: $*" >&2
  show_logs
  "$here/down.sh" >&2 || true
  exit 1
}
trap 'fail "setup failed at line $LINENO"' ERR

mkdir -p "$dir"/{munge,key,state,spool,tmp,log,run}
# munged wants its key private and its socket's directory open to every client.
chmod 0700 "$dir/key" "$dir/state"
chmod 0755 "$dir" "$dir/munge"
echo "$shape" >"$dir/shape"
# Marks every daemon (and the slurmstepd they start) as this cluster's, for down.sh.
export RAILBENCH_SLURM_DIR=$dir SLURM_CONF=$conf

# munge: a key of its own and a socket of its own; a system munged is left alone.
mungekey --create --keyfile="$dir/key/munge.key" --bits=1024 >/dev/null
munged --socket="$socket" --key-file="$dir/key/munge.key" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" ||
  fail "munged did not start"

host=$(hostname -s)
cat >"$conf" <<CONF
# Written by scripts/slurm-local/up.sh: a throwaway test cluster, $shape.
ClusterName=railbench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$RAILBENCH_SLURM_PORT
# Root runs everything: a test cluster on one host, not a production setup.
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
# Per node: the pmix plugin makes its client directories here (under /tmp by default,
# where two simulated nodes' steps would collide).
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
# No cgroups, no accounting: nothing outside this directory to set up or to clean.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
# Nodes declare more CPUs than the host has (config_overrides lets slurmd accept it),
# and a partition that oversubscribes: 8 ranks on 2 real cores.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/backfill
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=60
MessageTimeout=20
NodeName=127.0.0.[1-$nodes] NodeHostname=$host CPUs=$cpus RealMemory=1000 State=UNKNOWN Port=[$((RAILBENCH_SLURM_PORT + 1))-$last_port]
PartitionName=debug Nodes=ALL Default=YES MaxTime=60 State=UP OverSubscribe=YES
CONF
# One node: Slurm wants "127.0.0.[1-1]" written as a plain name.
((nodes > 1)) || sed -i 's/^NodeName=127\.0\.0\.\[1-1\]/NodeName=127.0.0.1/; s/Port=\[\([0-9]*\)-[0-9]*\]/Port=\1/' "$conf"

cat >"$dir/env" <<ENV
# source this file to use the throwaway cluster (scripts/slurm-local/up.sh)
export SLURM_CONF=$conf
ENV

for ((n = 1; n <= nodes; n++)); do mkdir -p "$dir/spool/127.0.0.$n" "$dir/tmp/127.0.0.$n"; done
slurmctld -f "$conf" || fail "slurmctld did not start"
for ((n = 1; n <= nodes; n++)); do
  slurmd -f "$conf" -N "127.0.0.$n" || fail "slurmd for node 127.0.0.$n did not start"
done

# Up when sinfo shows every node idle.
deadline=$((SECONDS + timeout))
while :; do
  state=$(timeout 10 sinfo -h -o '%T %D' 2>/dev/null || true)
  [[ $state == "idle $nodes" ]] && break
  ((SECONDS < deadline)) || {
    trap - ERR
    fail "the nodes were not idle within ${timeout}s (sinfo: ${state:-no answer})"
  }
  sleep 0.5
done
trap - ERR
echo "slurm-local: up: $nodes nodes 127.0.0.[1-$nodes] x $cpus CPUs, slurmctld on port $RAILBENCH_SLURM_PORT;" \
  "use it with: source $dir/env"

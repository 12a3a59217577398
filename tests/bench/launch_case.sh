#!/usr/bin/env bash
# Launchers railbench detects from the environment (lib/runtime/launch.h), each with real
# processes meeting over the real TCP rendezvous: a Slurm job step's variables (as srun
# sets them, without srun: the `slurm` tests run the real one), torchrun/Kubernetes
# variables, and the launches that must fail with the variables named instead of
# falling back to a single rank.
# Usage: launch_case.sh RAILBENCH CASE
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_name=$2
case_work
case_on_exit 'kill $(jobs -p) 2>/dev/null'

# A free port P whose P+1 is free too (torchrun's ranks meet on MASTER_PORT+1).
free_port_pair() {
  python3 - <<'PY'
import socket
for _ in range(100):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
    except OSError:
        continue
    print(p)
    break
PY
}
json_get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# Starts `n` ranks with per-rank environment from the function env_for RANK; waits.
run_world() {
  local n=$1
  shift
  local pids=() r
  for ((r = 0; r < n; r++)); do
    # shellcheck disable=SC2046
    env $(env_for "$r") timeout 120 "$rb" "$@" --json "$work/$r.json" >"$work/out$r" 2>&1 &
    pids+=($!)
  done
  rcs=()
  for p in "${pids[@]}"; do
    wait "$p"
    rcs+=($?)
  done
}

case $case_name in
  slurm-step)
    # Two "nodes" (SLURMD_NODENAME) on this host; rank 0's host is the step's first.
    job=$((100000 + RANDOM))
    env_for() {
      echo "SLURM_JOB_ID=$job SLURM_STEP_ID=3 SLURM_PROCID=$1 SLURM_NTASKS=2 SLURM_STEP_NUM_TASKS=2" \
        "SLURM_LOCALID=0 SLURM_STEP_NODELIST=localhost SLURMD_NODENAME=n$1"
    }
    run_world 2 allreduce -t ofi:tcp --rails lo -b 1K -e 64K -c --timeout 30
    [[ ${rcs[*]} == "0 0" ]] || fail "exit codes ${rcs[*]}"
    grep -q "Out of bounds values : 0 OK" "$work/out0" || fail "no clean -c check in rank 0's table"
    [[ $(json_get "$work/0.json" 'd["world"]["launcher"]') == slurm ]] || fail "JSON launcher is not slurm"
    [[ $(json_get "$work/0.json" 'd["world"]["bootstrap"]') == tcp ]] || fail "JSON bootstrap is not tcp"
    # Node grouping from SLURMD_NODENAME, not the (shared) hostname.
    [[ $(json_get "$work/0.json" 'd["world"]["hosts"]') == 2 ]] || fail "the two Slurm nodes were not seen as two hosts"
    [[ $(json_get "$work/0.json" '[r["host"] for r in d["world"]["ranks"]]') == "['n0', 'n1']" ]] ||
      fail "rank hosts are not the Slurm node names"
    ;;
  torchrun-env)
    port=$(free_port)
    env_for() { echo "RANK=$1 WORLD_SIZE=2 LOCAL_RANK=$1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"; }
    run_world 2 sendrecv -t ofi:tcp --rails lo -b 8 -e 4K -f 8 -n 50 --bw-iters 2 -c --timeout 30
    [[ ${rcs[*]} == "0 0" ]] || fail "exit codes ${rcs[*]}"
    [[ $(json_get "$work/0.json" 'd["world"]["launcher"]') == torchrun ]] || fail "JSON launcher is not torchrun"
    [[ $(json_get "$work/0.json" '[r["local_rank"] for r in d["world"]["ranks"]]') == "[0, 1]" ]] ||
      fail "local ranks are not LOCAL_RANK's"
    ;;
  torchrun-agent)
    # torchrun's agent store holds MASTER_PORT: the ranks meet one port above it.
    port=$(free_port_pair)
    python3 -c 'import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(100)' "$port" &
    sleep 0.5
    env_for() { echo "RANK=$1 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TORCHELASTIC_RUN_ID=t$port"; }
    "$rb" info 2>&1 | grep "launcher: none" >/dev/null || fail "info without variables does not say 'launcher: none'"
    env $(env_for 1) "$rb" info >"$work/out_info" 2>&1
    grep -q "rendezvous: tcp 127.0.0.1:$((port + 1)) (MASTER_ADDR, MASTER_PORT+1" "$work/out_info" ||
      fail "info does not name the port above the agent's"
    run_world 2 allreduce -t ofi:tcp --rails lo -b 1K -e 4K -c --timeout 30
    [[ ${rcs[*]} == "0 0" ]] || fail "exit codes ${rcs[*]} with the agent on MASTER_PORT"
    ;;
  slurm-rank-missing)
    # Task 1 of a 2-task step never starts: task 0 must fail within --timeout, naming the
    # missing rank and the variables it used, never run alone.
    job=$((200000 + RANDOM))
    env_for() { echo "SLURM_JOB_ID=$job SLURM_STEP_ID=0 SLURM_PROCID=$1 SLURM_NTASKS=2 SLURM_LOCALID=0 SLURM_STEP_NODELIST=localhost"; }
    start=$SECONDS
    run_world 1 allreduce -t ofi:tcp --rails lo -b 1K -e 4K --timeout 3
    ((rcs[0] != 0)) || fail "task 0 alone exited 0"
    ((SECONDS - start < 60)) || fail "task 0 took $((SECONDS - start)) s to give up with --timeout 3"
    grep -q "rank(s) 1 did not arrive" "$work/out0" || fail "the missing rank is not named"
    grep -q "SLURM_PROCID=0" "$work/out0" || fail "the launcher variables are not named"
    # Task 1 alone: rank 0 is the one missing.
    env $(env_for 1) timeout 60 "$rb" allreduce -t ofi:tcp --rails lo -b 1K -e 4K --timeout 3 >"$work/out1" 2>&1
    rc=$?
    ((rc != 0)) || fail "task 1 alone exited 0"
    grep -q "could not reach rank 0" "$work/out1" || fail "task 1 does not name rank 0"
    grep -q "SLURM_STEP_NODELIST=localhost" "$work/out1" || fail "task 1 does not name the variables it used"
    ;;
  slurm-broken)
    # A step whose variables cannot make a job: exit 2 naming them, no single-rank run.
    SLURM_JOB_ID=5 SLURM_STEP_ID=0 SLURM_PROCID=1 SLURM_NTASKS=4 "$rb" allreduce -t ofi:tcp -b 8 -e 8 \
      >"$work/out0" 2>&1
    rc=$?
    ((rc == 2)) || fail "exit $rc, expected 2"
    grep -q "SLURM_STEP_NODELIST is not set" "$work/out0" || fail "the missing variable is not named"
    grep -q "SLURM_NTASKS=4" "$work/out0" || fail "the variables seen are not listed"
    ;;
  mpi-mismatch)
    # PMI variables that this Open MPI cannot use: MPI_Init makes a world of 1 (each
    # process alone); that must be an error, not N single-rank passes.
    PMI_RANK=0 PMI_SIZE=2 timeout 60 "$rb" allreduce -t ofi:tcp -b 8 -e 8 >"$work/out0" 2>&1
    rc=$?
    ((rc == 2)) || fail "exit $rc, expected 2"
    grep -q "MPI_Init made a world of 1" "$work/out0" || fail "the mismatch is not explained"
    grep -q "PMI_SIZE=2" "$work/out0" || fail "the variables seen are not listed"
    ;;
  batch-script)
    # sbatch's script (or an salloc shell): the allocation's variables but no job step.
    SLURM_JOB_ID=9 SLURM_PROCID=0 SLURM_NTASKS=16 SLURM_NODELIST='n[1-2]' "$rb" info >"$work/out0" 2>&1 ||
      fail "info failed"
    grep -q "launcher: none" "$work/out0" || fail "a batch script was taken for a job step"
    ;;
  *)
    echo "unknown case $case_name"
    exit 2
    ;;
esac
echo PASS

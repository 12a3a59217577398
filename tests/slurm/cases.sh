#!/usr/bin/env bash
# railbench under a real Slurm: the throwaway cluster of scripts/slurm-local (4 slurmd
# nodes 127.0.0.[1-4] on this host), srun and sbatch as users type them.
#   cases.sh CASE RAILBENCH
# CASE: up, down (the ctest fixture around the others), srun-allreduce, srun-sendrecv,
# srun-pmix, sbatch-sweep, sbatch-validate, kill. Exit 77 (ctest: skipped, with the reason
# printed) where Slurm cannot run here (not root, slurm-wlm/munge not installed) or,
# for srun-pmix, where `srun --mpi=list` offers no pmix.
source "$(dirname "$0")/../support/case.sh"
root=$(cd "$here/../.." && pwd)
case_name=$1 rb=$(readlink -f "$2")
export RAILBENCH_SLURM_DIR=${RAILBENCH_SLURM_DIR:-/tmp/railbench-slurm-ctest}
deadline=${RAILBENCH_TEST_DEADLINE:-150}

if [[ $(id -u) -ne 0 ]]; then
  skip "the local Slurm cluster needs root (slurmd starts job steps as their user)"
fi
for cmd in slurmctld slurmd munged srun sbatch; do
  command -v "$cmd" >/dev/null || {
    skip "'$cmd' not installed (scripts/install-deps.sh installs slurm-wlm and munge)"
  }
done

case $case_name in
  up)
    "$root/scripts/slurm-local/up.sh" --nodes 4 --cpus 8 || fail "the cluster did not come up"
    exit 0
    ;;
  down)
    "$root/scripts/slurm-local/down.sh" || fail "down.sh failed"
    source "$root/scripts/slurm-local/lib.sh"
    left=$(rb_slurm_pids)
    [[ -z $left ]] || fail "processes of the cluster still running: $left"
    [[ ! -e $RAILBENCH_SLURM_DIR ]] || fail "$RAILBENCH_SLURM_DIR left behind"
    "$root/scripts/slurm-local/down.sh" || fail "down.sh a second time (nothing up) failed"
    echo "PASS: no daemon and no file left"
    exit 0
    ;;
esac

[[ -f $RAILBENCH_SLURM_DIR/env ]] || fail "the cluster is not up ($RAILBENCH_SLURM_DIR/env missing): the fixture 'slurm: cluster up' failed?"
source "$RAILBENCH_SLURM_DIR/env"
case_work
jobname="rbtest-$case_name-$$"
cleanup() {
  scancel --quiet --name="$jobname" 2>/dev/null
}
case_on_exit cleanup

# On failure: what Slurm itself said (the daemons' last log lines).
slurm_logs() {
  local f
  for f in "$RAILBENCH_SLURM_DIR"/log/*.log; do
    echo "--- $f (last 10 lines)"
    tail -n 10 "$f"
  done
}

# A railbench run under srun that must succeed with correct data (-c) in world size N.
srun_ok() {  # srun_ok RANKS COMMAND [railbench args...]   (2 ranks per node)
  local ranks=$1 command=$2 rc
  shift 2
  timeout --kill-after=10 "$deadline" srun --job-name="$jobname" --time=5 -N $((ranks / 2)) --ntasks-per-node=2 \
    "$rb" "$command" -t ofi:tcp --rails lo -c --timeout 30 --json "$work/r.json" "$@" >"$work/out" 2>"$work/err"
  rc=$?
  cat "$work/out"
  if ((rc != 0)); then
    cat "$work/err"
    slurm_logs
    fail "srun exit code $rc (124 = deadline of ${deadline}s hit)"
  fi
  grep -q '#wrong\|wrong' "$work/out" || fail "no results table on srun's stdout"
}

# The results file says one job of N ranks ran, not N single ranks.
check_world() {  # check_world RANKS BOOTSTRAP_REGEX
  python3 - "$work/r.json" "$1" "$2" <<'PY' || exit 1
import json, re, sys
doc = json.load(open(sys.argv[1]))
size, want = int(sys.argv[2]), sys.argv[3]
w = doc["world"]
if w["size"] != size:
    print(f"FAIL: world size {w['size']}, want {size} (each task ran alone: the launcher was not found)")
    sys.exit(1)
if not re.fullmatch(want, str(w["bootstrap"])):
    print(f"FAIL: bootstrap {w['bootstrap']!r}, want /{want}/")
    sys.exit(1)
print(f"world: {w['size']} ranks over the {w['bootstrap']} bootstrap, {w['hosts']} host(s)")
PY
}

case $case_name in
  srun-allreduce)
    # 4 ranks on 2 nodes, no MPI: railbench finds its peers from Slurm's variables.
    srun_ok 4 allreduce -b 1K -e 1M -f 4 -n 5
    check_world 4 '(?!mpi$|single$).*'
    python3 "$here/../bench/check_results.py" "$work/r.json" --ranks 4 --command allreduce --check --sizes 6 || exit 1
    # And `railbench info` inside a step says it found Slurm.
    timeout --kill-after=10 60 srun --job-name="$jobname" --time=2 -N 1 -n 1 "$rb" info >"$work/info" 2>&1
    grep -i '^launcher:' "$work/info" || { cat "$work/info"; fail "railbench info prints no 'launcher:' line"; }
    grep -qi '^launcher:.*slurm' "$work/info" || fail "railbench info under srun does not name Slurm as the launcher"
    echo "PASS"
    ;;
  srun-sendrecv)
    srun_ok 2 sendrecv -b 8 -e 64K -f 16 -n 100 --bw-iters 3
    check_world 2 '(?!mpi$|single$).*'
    python3 "$here/../bench/check_results.py" "$work/r.json" --ranks 2 --command sendrecv --check --sizes 4 || exit 1
    echo "PASS"
    ;;
  srun-pmix)
    mpis=$(srun --mpi=list 2>&1)
    if ! grep -qw pmix <<<"$mpis"; then
      echo "SKIP: srun --mpi=list offers no pmix here:"
      echo "$mpis"
      exit 77
    fi
    echo "srun --mpi=list: $(tr -s '\n\t ' ' ' <<<"$mpis")"
    # Open MPI's own PMIx client meets slurmstepd's pmix server: the MPI bootstrap.
    # The simulated nodes share one host name, so Open MPI's shared-memory transport
    # (vader) between a node's ranks collides with the other node's (a crash in MPI);
    # on one host, MPI's own traffic goes over TCP on lo, as mpirun.sh does in the netns SU.
    OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo \
      timeout --kill-after=10 "$deadline" srun --mpi=pmix --job-name="$jobname" --time=5 -N 2 --ntasks-per-node=2 \
      "$rb" allreduce -t ofi:tcp --rails lo -b 1K -e 1M -f 8 -c -n 5 --timeout 30 --json "$work/r.json" \
      >"$work/out" 2>"$work/err"
    rc=$?
    cat "$work/out"
    ((rc == 0)) || { cat "$work/err"; slurm_logs; fail "srun --mpi=pmix exit code $rc"; }
    check_world 4 'mpi'
    python3 "$here/../bench/check_results.py" "$work/r.json" --ranks 4 --command allreduce --check --sizes 4 || exit 1
    echo "PASS"
    ;;
  sbatch-sweep)
    # The shipped script as shipped, with small sizes through its variables and the
    # local cluster's shape on sbatch's command line (no GPUs here: --gres=none).
    start=$SECONDS
    timeout --kill-after=10 "$deadline" sbatch --wait --job-name="$jobname" --time=5 -N 2 --ntasks-per-node=2 \
      --gres=none --output="$work/sweep.out" \
      --export="ALL,RAILBENCH=$rb,RAILBENCH_MIN_BYTES=1K,RAILBENCH_MAX_BYTES=256K,RAILBENCH_STEP_FACTOR=16,RAILBENCH_ITERS=3,RAILBENCH_TRANSPORT=ofi:tcp,RAILBENCH_CHECK=1,RAILBENCH_TIMEOUT=30,RAILBENCH_OUT_DIR=$work/results" \
      "$root/scripts/slurm/sweep.sbatch" --rails lo >"$work/sbatch.out" 2>&1
    rc=$?
    cat "$work/sbatch.out"
    echo "--- the job's output ($work/sweep.out)"
    cat "$work/sweep.out" 2>/dev/null
    ((rc == 0)) || { slurm_logs; fail "sbatch --wait exit code $rc after $((SECONDS - start))s"; }
    for coll in allreduce allgather reducescatter alltoall; do
      grep -qx "sweep: $coll: ok" "$work/sweep.out" || fail "the summary lacks 'sweep: $coll: ok'"
      python3 "$here/../bench/check_results.py" "$work/results/$coll.json" --ranks 4 --command "$coll" --check \
        --sizes 3 || fail "$coll's results"
      cp "$work/results/$coll.json" "$work/r.json"
      check_world 4 '(?!single$).*'
    done
    echo "PASS: 4 collectives, 4 ranks on 2 nodes, all checked, in $((SECONDS - start))s"
    ;;
  sbatch-validate)
    # validate-su.sbatch on the local cluster, twice. Its nodes all share this host's
    # name, so a real SU validate cannot pass here (the netns SU tests cover validate);
    # what is checked is the script's contract with Slurm:
    # 1. real railbench, a config whose nodes are not these: validate's exit code 2 and
    #    its one error line come back through srun and sbatch --wait;
    # 2. a stand-in railbench whose validate writes the drain list 127.0.0.[3-4] and
    #    exits 1: the script prints the list and the scontrol line, and with
    #    RAILBENCH_AUTO_DRAIN=1 really drains those two nodes (resumed afterwards).
    resume() {  # back to idle for the cases after this one
      scontrol update nodename='127.0.0.[3-4]' state=resume 2>/dev/null
      for ((i = 0; i < 100; i++)); do
        [[ $(sinfo -h -n '127.0.0.[3-4]' -o '%T %D') == "idle 2" ]] && return
        sleep 0.2
      done
    }
    case_on_exit resume
    small=(--wait --job-name="$jobname" --time=5 -N 2 --ntasks-per-node=2 --gres=none)
    timeout --kill-after=10 "$deadline" sbatch "${small[@]}" --output="$work/v1.out" \
      --export="ALL,RAILBENCH=$rb,RAILBENCH_CONFIG=$root/configs/netns-4x2.json,RAILBENCH_OUT_DIR=$work/v1" \
      "$root/scripts/slurm/validate-su.sbatch" >/dev/null 2>&1
    rc=$?
    cat "$work/v1.out"
    ((rc == 2)) || { slurm_logs; fail "sbatch --wait exit code $rc, want validate's 2 (bad input)"; }
    grep -q "^railbench: error: .*not among the config's nodes" "$work/v1.out" || fail "validate's error line is missing"
    grep -qx "validate-su: validate exit code 2" "$work/v1.out" || fail "the script did not report validate's exit code"

    cat >"$work/railbench" <<'STUB'
#!/usr/bin/env bash
# Stand-in for railbench: validate finds nodes 127.0.0.3 and 127.0.0.4 bad.
if [[ $* == "--help" ]]; then echo "Subcommands:"; echo "  validate   Acceptance test"; exit 0; fi
if [[ $* == "validate --help" ]]; then echo "  --drain-list TEXT   bad nodes as a hostlist"; exit 0; fi
while (($#)); do
  case $1 in
    --drain-list) echo '127.0.0.[3-4]' >"$2"; shift 2 ;;
    --json) echo '{"status": "complete"}' >"$2"; shift 2 ;;
    *) shift ;;
  esac
done
exit 1
STUB
    chmod +x "$work/railbench"
    timeout --kill-after=10 "$deadline" sbatch "${small[@]}" --output="$work/v2.out" \
      --export="ALL,RAILBENCH=$work/railbench,RAILBENCH_CONFIG=any,RAILBENCH_OUT_DIR=$work/v2,RAILBENCH_AUTO_DRAIN=1" \
      "$root/scripts/slurm/validate-su.sbatch" >/dev/null 2>&1
    rc=$?
    cat "$work/v2.out"
    ((rc == 1)) || fail "sbatch --wait exit code $rc, want validate's 1"
    grep -qx 'validate-su: nodes to drain: 127.0.0.\[3-4\]' "$work/v2.out" || fail "the drain list is not printed"
    grep -q '^  scontrol update nodename=127.0.0.\[3-4\] state=drain reason="railbench validate ' "$work/v2.out" ||
      fail "the scontrol line is not printed"
    drained=$(sinfo -h -N -t drain,drained,draining -o '%N %E' | sort -u)
    echo "sinfo, drained nodes: $drained"
    if [[ $(grep -c 'railbench validate' <<<"$drained") -ne 2 ]] || ! grep -q '^127.0.0.3 ' <<<"$drained" ||
      ! grep -q '^127.0.0.4 ' <<<"$drained"; then
      fail "RAILBENCH_AUTO_DRAIN=1 did not drain exactly 127.0.0.[3-4]"
    fi
    echo "PASS: validate's exit codes come back through sbatch; the drain list is printed and, when asked, drained"
    ;;
  kill)
    # Rank 2 of 4 (the first task on the second node) is killed -9 mid-run, as the OOM
    # killer or a crash would; srun does not end the step (no --kill-on-bad-exit), so
    # the survivors must notice on their own, within --timeout, and name rank 2.
    timeout --kill-after=10 "$deadline" srun --job-name="$jobname" --time=5 -N 2 --ntasks-per-node=2 \
      --kill-on-bad-exit=0 "$rb" allreduce -t ofi:tcp --rails lo -b 1K -e 64K -n 1000000 -w 1 --timeout 5 \
      --json "$work/r.json" >"$work/out" 2>"$work/err" &
    srun_pid=$!
    started=$SECONDS
    victim="" node=""
    for ((i = 0; i < 300; i++)); do
      [[ -z $victim ]] || break
      sleep 0.1
      job=$(squeue -h --name="$jobname" -o %i 2>/dev/null | head -1)
      [[ -n $job ]] || continue
      # The step's pids on each of its nodes; GLOBALID is the rank.
      for node in $(scontrol show hostnames "$(squeue -h -j "$job" -o %N)" 2>/dev/null); do
        victim=$(scontrol listpids "$job.0" "$node" 2>/dev/null | awk '$5 == 2 {print $1}')
        [[ -n $victim ]] && break
      done
    done
    [[ -n $victim ]] || { kill "$srun_pid"; cat "$work/out" "$work/err"; fail "rank 2's pid never appeared in scontrol listpids"; }
    sleep 4 # past setup, inside the timed iterations
    echo "killing rank 2 (pid $victim on node $node, job $job) with SIGKILL"
    kill -KILL "$victim"
    killed_at=$SECONDS
    wait "$srun_pid"
    rc=$?
    took=$((SECONDS - killed_at))
    echo "--- stdout"
    cat "$work/out"
    echo "--- stderr"
    cat "$work/err"
    # srun's own exit code is 137 here (task 2 ended by SIGKILL); timeout's is 124.
    ((rc == 124 || SECONDS - started >= deadline)) && fail "the job did not end within the ${deadline}s deadline"
    ((rc != 0)) || fail "srun exit code 0 with rank 2 killed"
    # --timeout 5: the survivors' deadline, plus launch and teardown slack.
    ((took <= 30)) || fail "the survivors took ${took}s after the kill to end (--timeout 5)"
    mapfile -t lines < <(grep '^railbench: error:' "$work/err")
    ((${#lines[@]} > 0)) || fail "no 'railbench: error:' line from the survivors"
    for l in "${lines[@]}"; do
      [[ $l =~ rank\ 2\ \( ]] || fail "an error line does not name the killed rank 2: $l"
    done
    grep -q "task 2: Killed" "$work/err" || fail "srun did not report task 2 as killed"
    echo "PASS: srun exit $rc ${took}s after the kill; ${#lines[@]} error line(s), all naming rank 2"
    ;;
  *)
    echo "usage: cases.sh up|down|srun-allreduce|srun-sendrecv|srun-pmix|sbatch-sweep|sbatch-validate|kill RAILBENCH" >&2
    exit 2
    ;;
esac

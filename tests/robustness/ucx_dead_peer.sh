#!/usr/bin/env bash
# A peer killed mid-transfer over UCX is named by UCX's own failure detection, not by a
# deadline: two ranks over the TCP rendezvous (no mpirun, which would end the survivor
# itself) run a sendrecv sweep with --timeout 60; rank 1 is SIGKILLed in the middle of
# it. Rank 0 must exit non-zero within 20 s of the kill (a third of the deadline), with
# one error line naming rank 1 and the UCS_ERR_* code of its failed endpoint, and no
# crash or UCX warning while it tears down.
# With RAILBENCH_UCX_PEER_FAILURE=off (TLS shm-off) UCX does not notice: the wait's
# deadline (--timeout 6) must, and the error line must name rank 1 as gone (the liveness
# probe) within 20 s. Or, when the kill lands inside one of UCX's cma copies, UCX aborts
# the survivor itself (its fatal error, as under Open MPI): then its message must name
# the dead process (process_vm_readv/writev of rank 1's pid: No such process).
#   ucx_dead_peer.sh TLS RAILBENCH     TLS: tcp (on lo), shm or shm-off
source "$(dirname "$0")/../support/case.sh"
tls=$1 rb=$2
case_work
timeout=60
if [[ $tls == shm-off ]]; then
  tls=shm timeout=6
  export RAILBENCH_UCX_PEER_FAILURE=off
fi

rails=()
[[ $tls == tcp ]] && rails=(--rails lo)
port=$((20000 + RANDOM % 20000))
pids=()
for r in 0 1; do
  RAILBENCH_RANK=$r RAILBENCH_WORLD_SIZE=2 RAILBENCH_ROOT=127.0.0.1:$port \
    "$rb" sendrecv -t "ucx:$tls" "${rails[@]}" -b 64K -e 64K -n 1000000 -w 1 --timeout "$timeout" \
    >"$work/out$r" 2>"$work/err$r" &
  pids+=($!)
  case_started $!
done
# Both ranks are inside the sweep once rank 0 prints its header (setup is over).
for ((i = 0; i < 300; ++i)); do
  [[ -s $work/out0 ]] && break
  kill -0 "${pids[0]}" 2>/dev/null || fail "rank 0 ended before the transfer started"
  sleep 0.1
done
[[ -s $work/out0 ]] || fail "rank 0 printed nothing within 30 s"
sleep 1
disown "${pids[1]}"  # out of the job table first, so bash does not report the kill
kill -KILL "${pids[1]}"
killed_at=$(date +%s.%N)
for ((i = 0; i < 200; ++i)); do
  kill -0 "${pids[0]}" 2>/dev/null || break
  sleep 0.1
done
kill -0 "${pids[0]}" 2>/dev/null && fail "rank 0 still runs 20 s after rank 1 was killed (--timeout is $timeout s)"
wait "${pids[0]}"
rc=$?
took=$(python3 -c "import sys,time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$killed_at")
((rc != 0)) || fail "rank 0 exited 0 with its peer killed"
if [[ -n ${RAILBENCH_UCX_PEER_FAILURE:-} ]] && ((rc == 134)); then
  grep -E "process_vm_(readv|writev)\(pid=${pids[1]} .*No such process" "$work/err0" ||
    fail "rank 0 aborted, but not on UCX's copy from the dead rank 1 (pid ${pids[1]})"
  echo "PASS: ucx:$tls: rank 0 aborted by UCX's cma ${took} s after the kill (peer-failure handling off)"
  exit 0
fi
((rc < 128)) || fail "rank 0 died of signal $((rc - 128)) (a crash tearing down after its peer died)"
# Teardown after the peer died is clean: UCX has nothing to complain of (a request left
# behind shows as "UCX WARN ... was not returned to mpool"). Without peer-failure handling
# the send the dead peer never took stays UCX's: that one warning is expected there.
warned=$(grep -E 'UCX +(WARN|ERROR)' "$work/out0" "$work/err0" || true)
if [[ -n ${RAILBENCH_UCX_PEER_FAILURE:-} ]]; then
  warned=$(grep -v 'was not returned to mpool' <<<"$warned" || true)
fi
[[ -z $warned ]] || fail "UCX warned or failed during teardown: $warned"
mapfile -t lines < <(grep '^railbench: error:' "$work/err0")
((${#lines[@]} == 1)) || fail "rank 0 printed ${#lines[@]} error lines, expected one"
[[ ${lines[0]} =~ rank\ 1\ \( ]] || fail "the error line does not name rank 1: ${lines[0]}"
if [[ -n ${RAILBENCH_UCX_PEER_FAILURE:-} ]]; then
  [[ ${lines[0]} =~ rank\ 1\ \([^\)]*\)\ is\ gone ]] || fail "the error line does not say rank 1 is gone: ${lines[0]}"
else
  [[ ${lines[0]} =~ UCS_ERR_[A-Z_]+ ]] || fail "the error line has no UCS_ERR_* code: ${lines[0]}"
fi
echo "PASS: ucx:$tls: rank 0 exit $rc ${took} s after the kill: ${lines[0]}"

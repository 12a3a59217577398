#!/usr/bin/env bash
# Rank 0's open-file limit against the world size (one socket per peer):
#   1. hard limit below what the world needs: rank 0 exits 2 at once, before admitting
#      anyone, naming `ulimit -n` and the number needed (not EMFILE mid-rendezvous, nor a
#      timeout that blames ranks which could never have been admitted);
#   2. soft limit below, hard limit above: rank 0 raises its soft limit (read back from
#      /proc/PID/limits while it waits for the ranks) and goes on waiting.
#   nofile_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
set -e
rb=$1
case_work
pid=""
cleanup() {
  if [[ -n $pid ]]; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
}
case_on_exit cleanup
command -v prlimit >/dev/null || skip "prlimit (util-linux) not found"
port=$(free_port)
world=2000
need=$((world - 1 + 64 + 256))
# Runs in a subshell that becomes rank 0 (exec), so $! is rank 0's pid.
rank0() {
  exec env RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=$world RAILBENCH_ROOT=127.0.0.1:$port \
    prlimit --nofile="$1" -- "$rb" allreduce -t ofi:tcp --rails lo -b 8 -e 8 --timeout "$2"
}

# 1. Hard limit 1024 < need: refused up front.
start=$SECONDS
set +e
(rank0 512:1024 30) >"$work/out" 2>"$work/err" </dev/null
rc=$?
set -e
((rc == 2)) || fail "hard limit 1024 for $world ranks: exit $rc, expected 2"
((SECONDS - start < 10)) || fail "the refusal took $((SECONDS - start)) s: it must come before the rendezvous waits"
grep -q "needs $need open files for $world ranks" "$work/err" || fail "the error does not name the $need files needed"
grep -q "ulimit -n $need" "$work/err" || fail "the error does not name the fix (ulimit -n $need)"
[[ $(wc -l <"$work/err") -eq 1 ]] || fail "the error is not one line"
echo "ok: hard limit 1024 for $world ranks: exit 2 in $((SECONDS - start)) s: $(cat "$work/err")"

# 2. Soft 512, hard high enough: raised to $need while rank 0 waits for the others.
(rank0 512:$((need + 100)) 20) >"$work/out" 2>"$work/err" </dev/null &
pid=$!
soft=""
for _ in $(seq 100); do
  soft=$(awk '/^Max open files/ {print $4}' "/proc/$pid/limits" 2>/dev/null || true)
  [[ $soft == "$need" ]] && break
  sleep 0.1
done
[[ $soft == "$need" ]] || fail "rank 0's soft open-file limit is '$soft', expected it raised to $need"
kill -0 "$pid" 2>/dev/null || fail "rank 0 exited instead of waiting for its ranks"
echo "ok: soft limit 512 raised to $need while rank 0 waits for $((world - 1)) ranks"

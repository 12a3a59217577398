#!/usr/bin/env bash
# A rank that starts before rank 0 and retries its connect can be handed rank 0's own
# port as its source port: TCP's simultaneous open then connects the socket to itself,
# it reads back its own hello, and (until this was handled) the rank failed with a
# protocol error while rank 0 could not bind its port. Seen as a rare CI failure when
# MASTER_PORT+1 fell in the ephemeral range.
#
# Made certain here: in a private network namespace whose ephemeral range is only
# {P, P+1}, rank 1 is started alone against 127.0.0.1:P, so about every other retry
# connects to itself.
#   1. rank 1 alone: it must time out naming rank 0 (not a protocol error), and leave
#      nothing on port P (no TIME_WAIT, which would block rank 0's bind);
#   2. rank 1 retrying like that, then the range is widened and rank 0 started: the
#      job must run to the end.
# Exit 77 (skipped) where network namespaces cannot be made (not root).
#   self_connect_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
ns="rbself-$$"
P=40100
case_work
cleanup() {
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$ns" 2>/dev/null
}
case_on_exit cleanup
if [[ $(id -u) -ne 0 ]] || ! ip netns add "$ns" 2>/dev/null; then
  skip "needs root and network namespaces"
fi
in_ns() { ip netns exec "$ns" "$@"; }
in_ns ip link set lo up
in_ns sysctl -qw net.ipv4.ip_local_port_range="$P $((P + 1))" || fail "cannot narrow the ephemeral port range"
rank() {  # rank R TIMEOUT: one rank of a 2-rank job meeting at 127.0.0.1:P
  in_ns env RAILBENCH_RANK="$1" RAILBENCH_WORLD_SIZE=2 RAILBENCH_ROOT="127.0.0.1:$P" timeout 120 \
    "$rb" allreduce -t ofi:tcp --rails lo -b 1K -e 4K -c --timeout "$2"
}

# 1. Alone: ~20 retries at 100 ms over 2 s, every other one to itself.
rank 1 2 >"$work/alone.out" 2>&1
rc=$?
((rc != 0)) || fail "rank 1 alone exited 0"
grep -q "could not reach rank 0" "$work/alone.out" ||
  fail "rank 1 alone did not time out naming rank 0 (exit $rc): a connection to itself was taken for rank 0"
left=$(in_ns ss -Htan "sport = :$P" | wc -l)
((left == 0)) || fail "rank 1 left $left socket(s) on port $P, which keep rank 0 from binding it: $(in_ns ss -Htan)"

# 2. Rank 1 retries against itself for 2 s, then rank 0 comes up.
rank 1 60 >"$work/rank1.out" 2>&1 &
r1=$!
sleep 2
in_ns sysctl -qw net.ipv4.ip_local_port_range="32768 60999"  # the transport's endpoints need ports
rank 0 60 >"$work/rank0.out" 2>&1
rc0=$?
wait "$r1"
rc1=$?
[[ "$rc0 $rc1" == "0 0" ]] || fail "exit codes $rc0 (rank 0) $rc1 (rank 1) when rank 1 started first"
grep -q "Out of bounds values : 0 OK" "$work/rank0.out" || fail "no clean -c check in rank 0's table"
echo "PASS: a rank that connects to itself keeps waiting for rank 0, and rank 0 can still bind"

#!/usr/bin/env bash
# The simulated SU's spine uplinks (scripts/netns-su/up.sh --oversubscription F): real TCP
# flows between real namespaces show that cross-rail traffic, which crosses the spine,
# is capped at the leaf's uplink rate while the same flows inside one leaf (same rail)
# are not.
#   oversub_case.sh
# 4 nodes x 2 rails at 200 Mb/s, F = 4: each leaf's uplink carries 200 Mb/s, a quarter of
# what its 4 nodes can send. Four flows at once, each node's rail0 to another node:
#   same leaf  nodeN rail0 -> node(N+1) rail0: limited only by the node links (4 x 200)
#   spine      nodeN rail0 -> node(N+1) rail1: all four share leaf0's uplink (200)
# and then, rebuilt at the default 1:1 (uplink 800), the spine flows as fast as same-leaf.
source "$(dirname "$0")/../support/case.sh"
case_su_up rbtover

# Bad input: a clear error and exit 2, nothing built.
out=$("$su/up.sh" --oversubscription 0.5 2>&1)
rc=$?
((rc == 2)) && [[ $out == *"--oversubscription 0.5: a ratio of downlink to uplink capacity, 1..64"* ]] ||
  fail "up.sh --oversubscription 0.5: exit $rc, '$out'"
[[ ! -f $RB_SU_STATE/su.env ]] || fail "a refused up.sh left state behind"

rate=200 oversub=4
"$su/up.sh" --nodes 4 --rails 2 --rate $rate --oversubscription $oversub || fail "up.sh failed"
source "$su/lib.sh"
set +e  # lib.sh sets -e; this test checks each step itself
rb_su_load_state
((RB_SU_UPLINK == 4 * rate / oversub)) || fail "su.env records uplink $RB_SU_UPLINK Mb/s, expected $((4 * rate / oversub))"
spine=$RB_SU_PREFIX-spine
tc -n "$spine" class show dev leaf0 | grep "rate ${RB_SU_UPLINK}Mbit" >/dev/null ||
  fail "the spine's leg into leaf0 is not shaped to the uplink rate: $(tc -n "$spine" class show dev leaf0)"

# One flow: a receiver counting bytes, a sender writing for D seconds from a given
# source address. Prints Mb/s over the receiver's middle seconds (the first and last
# 0.5 s are ramp-up and tail).
cat >"$work/flow.py" <<'PY'
import socket, sys, time
role = sys.argv[1]
if role == "recv":
    addr, port, out = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port)); srv.listen(1); srv.settimeout(30)
    conn, _ = srv.accept(); conn.settimeout(30)
    marks = []  # (time, total bytes)
    total = 0
    while True:
        b = conn.recv(1 << 20)
        if not b:
            break
        total += len(b)
        marks.append((time.monotonic(), total))
    t0, t1 = marks[0][0] + 0.5, marks[-1][0] - 0.5
    inside = [m for m in marks if t0 <= m[0] <= t1]
    mbps = (inside[-1][1] - inside[0][1]) * 8 / (inside[-1][0] - inside[0][0]) / 1e6
    open(out, "w").write(f"{mbps:.1f}\n")
else:
    src, dst, port, secs = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    s = socket.socket(); s.settimeout(30); s.bind((src, 0))
    for _ in range(100):
        try:
            s.connect((dst, port)); break
        except OSError:
            time.sleep(0.1)
    buf = b"\0" * (1 << 16)
    end = time.monotonic() + secs
    while time.monotonic() < end:
        s.sendall(buf)
    s.close()
PY

# flows DST_RAIL: nodeN rail0 -> node(N+1) rail DST_RAIL for all four N at once; prints
# each flow's Mb/s and leaves their sum in $sum.
flows() {
  local dst_rail=$1 n m pids=() port=5201
  rm -f "$work"/rate.*
  for n in 1 2 3 4; do
    m=$((n % 4 + 1))
    timeout 60 ip netns exec "$(rb_su_ns "$(rb_su_node_name $m)")" \
      python3 "$work/flow.py" recv "$(rb_su_rail_ip $m "$dst_rail")" $port "$work/rate.$n" &
    pids+=($!)
  done
  sleep 0.5
  for n in 1 2 3 4; do
    m=$((n % 4 + 1))
    timeout 60 ip netns exec "$(rb_su_ns "$(rb_su_node_name $n)")" \
      python3 "$work/flow.py" send "$(rb_su_rail_ip $n 0)" "$(rb_su_rail_ip $m "$dst_rail")" $port 5 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "a flow failed (exit $?)"; done
  sum=$(cat "$work"/rate.* | awk '{ s += $1 } END { printf "%.0f", s }')
  echo "  flows (Mb/s): $(cat "$work"/rate.* | tr '\n' ' ')-> total $sum Mb/s"
}

echo "same leaf (rail0 -> rail0), 4 flows:"
flows 0
same=$sum
echo "through the spine (rail0 -> rail1), 4 flows:"
flows 1
cross=$sum
uplink=$RB_SU_UPLINK
echo "uplink $uplink Mb/s ($oversub:1), node links $rate Mb/s: same leaf $same Mb/s, through the spine $cross Mb/s"

# The spine total is the uplink's rate (htb lets a little more through in bursts), and
# the same flows inside one leaf get well over twice as much (4x when the host keeps up).
awk -v c="$cross" -v u="$RB_SU_UPLINK" 'BEGIN { exit !(c >= 0.6 * u && c <= 1.25 * u) }' ||
  fail "4 flows through the spine carried $cross Mb/s, not about the uplink's $RB_SU_UPLINK Mb/s"
awk -v s="$same" -v u="$RB_SU_UPLINK" 'BEGIN { exit !(s >= 2 * u) }' ||
  fail "the same 4 flows inside one leaf carried only $same Mb/s (< 2 x the uplink): the leaf itself is limited"
# At the default 1:1 the uplink has the leaf's whole capacity: the same spine flows get
# about what they get inside a leaf.
"$su/down.sh" >/dev/null || fail "down.sh failed"
"$su/up.sh" --nodes 4 --rails 2 --rate $rate || fail "up.sh at 1:1 failed"
rb_su_load_state
((RB_SU_UPLINK == 4 * rate)) || fail "at 1:1 su.env records uplink $RB_SU_UPLINK Mb/s, expected $((4 * rate))"
echo "through the spine at 1:1 (uplink $RB_SU_UPLINK Mb/s), 4 flows:"
flows 1
full=$sum
awk -v f="$full" -v s="$same" 'BEGIN { exit !(f >= 0.75 * s) }' ||
  fail "at 1:1 the spine flows carried $full Mb/s, well below the $same Mb/s inside one leaf"
echo "PASS: oversubscription $oversub:1 caps cross-rail traffic at the uplink ($cross of $uplink Mb/s), not same-leaf ($same Mb/s); at 1:1 the spine carried $full Mb/s"

#!/usr/bin/env bash
# The progress line (README "Common options"): with stderr to a file, one line per size
# and only from rank 0 (mpirun -np 2); with --quiet, none; on a terminal (a tmux pane),
# a live line rewritten in place that leaves the screen clean when the run ends.
#   progress_case.sh RAILBENCH
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_work
sock="rbprogress$$"
rank1=""
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null
  [[ -n $rank1 ]] && kill "$rank1" 2>/dev/null
}
case_on_exit cleanup
line_re='^allreduce: size [0-9]+/4 \([0-9]+K\), [0-9]{2}:[0-9]{2} elapsed$'

echo "== stderr to a file, mpirun -np 2: one line per size, from rank 0 only"
timeout 120 bash -c "$(declare -f rb_mpirun); rb_mpirun 2 $rb allreduce -t ofi:shm -b 1K -e 64K -f 4 -n 3" \
  >"$work/out" 2>"$work/err" || fail "allreduce exit $?"
cat "$work/err"
n=$(grep -Ec "$line_re" "$work/err")
((n == 4)) || fail "expected 4 progress lines (one per size, rank 0 only), got $n"
for i in 1 2 3 4; do
  [[ $(grep -c "^allreduce: size $i/4 " "$work/err") == 1 ]] || fail "size $i/4 not exactly once"
done
grep -q 'elapsed' "$work/out" && fail "a progress line went to stdout"
grep -q $'\r' "$work/err" && fail "a carriage return in a file: the live line is for terminals only"

echo "== sendrecv to a file: one line per size, not per round"
timeout 120 bash -c "$(declare -f rb_mpirun); rb_mpirun 4 $rb sendrecv -t ofi:shm -b 8 -e 512 -f 8 -n 20 \
  --bw-iters 2" >"$work/out" 2>"$work/err" || fail "sendrecv exit $?"
cat "$work/err"
n=$(grep -Ec '^sendrecv: size [1-3]/3 \(' "$work/err")
((n == 3)) || fail "expected 3 sendrecv progress lines, got $n"
grep -q round "$work/err" && fail "per-round updates belong to the live line only"

echo "== --quiet: no progress at all"
timeout 120 bash -c "$(declare -f rb_mpirun); rb_mpirun 2 $rb allreduce -t ofi:shm -b 1K -e 64K -f 4 -n 3 --quiet" \
  >"$work/out" 2>"$work/err" || fail "allreduce --quiet exit $?"
[[ -s $work/err ]] && fail "--quiet still wrote to stderr: $(cat "$work/err")"
grep -q '# Avg bus bandwidth' "$work/out" || fail "--quiet must keep the table"

echo "== a terminal: rank 0 in a tmux pane, rank 1 beside it (TCP rendezvous)"
port=$((20000 + RANDOM % 20000))
rendezvous="RAILBENCH_WORLD_SIZE=2 RAILBENCH_ROOT=127.0.0.1:$port"
args=(allreduce -t ofi:tcp --rails lo -b 1K -e 4M -f 4 -n 40 -w 5 --timeout 30)
tmux -L "$sock" new-session -d -x 200 -y 50 -s progress \
  "RAILBENCH_RANK=0 $rendezvous timeout 120 $rb ${args[*]}; echo \"rc=\$?\" >$work/rc; sleep 120"
tmux -L "$sock" pipe-pane -t progress -o "cat >>$work/raw"
# Rank 0 waits in the rendezvous until rank 1 comes: nothing is drawn before the pipe.
RAILBENCH_RANK=1 RAILBENCH_WORLD_SIZE=2 RAILBENCH_ROOT=127.0.0.1:$port timeout 120 "$rb" "${args[@]}" \
  >"$work/out1" 2>&1 &
rank1=$!
seen=0
for ((i = 0; i < 1200; ++i)); do
  [[ -s $work/rc ]] && break
  tmux -L "$sock" capture-pane -p -t progress >"$work/pane" 2>/dev/null
  grep -Eq '^allreduce: size [0-9]+/7 \([0-9]+[KM]\), [0-9:]+ elapsed' "$work/pane" && seen=1
  sleep 0.1
done
[[ -s $work/rc ]] || fail "the run in the tmux pane did not end"
grep -q 'rc=0' "$work/rc" || fail "rank 0 in tmux: $(cat "$work/rc")"
((seen)) || fail "the live line never showed in the pane (capture-pane)"
sleep 0.3
tmux -L "$sock" capture-pane -p -t progress >"$work/pane"
echo "--- the pane at the end"
grep . "$work/pane"
grep -q 'elapsed' "$work/pane" && fail "the live line was left on the screen"
grep -q '# Avg bus bandwidth' "$work/pane" || fail "the table is missing from the pane"
# Every table row on a line of its own: 7 sizes, each row starting with its size.
rows=$(grep -Ec '^ +[0-9]+ +[0-9]+ +float +sum ' "$work/pane")
((rows == 7)) || fail "expected 7 clean table rows in the pane, got $rows"
# The bytes the terminal got: the line drawn with \r and erased with ESC [ K.
grep -q $'\rallreduce: size 1/7 (1K)' "$work/raw" || fail "no live line drawn with a carriage return"
grep -q $'\e\\[K' "$work/raw" || fail "the live line was never erased"
echo PASS

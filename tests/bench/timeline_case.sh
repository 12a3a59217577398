#!/usr/bin/env bash
# --timeline under a real mpirun (2 ranks): the file exists, reads back with an
# independent reader of the documented format (read_timeline.py) and sums to the bytes
# moved; the results name it; `railbench timeline --csv` and `railbench report` read it.
#   timeline_case.sh RAILBENCH sendrecv|allreduce
source "$(dirname "$0")/../support/case.sh"
rb=$1 kind=$2
case_work

B=65536 N=50 W=5 K=16 I=5
if [[ $kind == sendrecv ]]; then
  args=(sendrecv -t ofi:shm -b "$B" -e "$B" -n "$N" -w "$W" --window "$K" --bw-iters "$I")
else
  args=(allreduce -t ofi:tcp --rails lo -b 1M -e 1M -n 20 -w 2)
fi
rb_mpirun_deadline 120 2 "$rb" "${args[@]}" --timeline "$work/t.bin" --json "$work/r.json" >"$work/out" 2>"$work/err" || fail "the run failed (exit $?)"
cat "$work/out"
[[ -s $work/t.bin ]] || fail "no timeline file"
grep -q "^# timeline: $work/t.bin" "$work/out" || fail "no timeline summary in the output"

python3 - "$here" "$work/t.bin" "$work/r.json" "$kind" $B $N $W $K $I <<'PY' || fail "the timeline does not add up"
import json, sys
sys.path.insert(0, sys.argv[1])
import read_timeline
path, results, kind = sys.argv[2], sys.argv[3], sys.argv[4]
B, N, W, K, I = map(int, sys.argv[5:10])
t = read_timeline.read(path)
doc = json.load(open(results))
assert t["ranks"] == 2 and t["rails"] == 1 and t["bucket_us"] == 1000, t
tx = [sum(t["series"][(r, 0, "tx")]) for r in range(2)]
rx = [sum(t["series"][(r, 0, "rx")]) for r in range(2)]
print(f"tx per rank {tx}, rx per rank {rx}, {t['buckets']} buckets")
# Every byte one rank's sends completed, the other's receives did (tokens included).
assert tx[0] == rx[1] and tx[1] == rx[0], (tx, rx)
if kind == "sendrecv":
    # Each rank: ping-pong (W+N) x B, its stream direction and the bidirectional test,
    # (1 + I) windows of K messages each; plus 8-byte tokens.
    payload = (W + N) * B + 2 * (1 + I) * K * B
    for r in range(2):
        assert payload <= tx[r] <= payload + 8 * 1000, (r, tx[r], payload)
else:
    marks = t["marks"]
    # 20 timed iterations, out-of-place and in-place, each marked with its size.
    for r in range(2):
        assert len(marks[r]) == 40, len(marks[r])
        assert all(m[0] == 1 << 20 and m[2] > m[1] for m in marks[r]), marks[r][:3]
        assert all(a[2] <= b[1] for a, b in zip(marks[r], marks[r][1:])), "iterations overlap"
    # A 2-rank ring all-reduce sends half the buffer twice per call: (2 + 20) x 2 calls.
    payload = 44 * (1 << 20)
    for r in range(2):
        assert abs(tx[r] - payload) <= 0.01 * payload, (r, tx[r], payload)
field = doc["timeline"]
assert field["file"] == path and field["version"] == 1 and field["buckets"] == t["buckets"], field
by_rank = {l["rank"]: l for l in field["links"] if l["series"] == "tx"}
assert [by_rank[r]["bytes"] for r in range(2)] == tx, by_rank
for l in by_rank.values():
    assert l["peak_ms_gbps"] >= l["peak_1s_gbps"] >= l["peak_5min_gbps"] > 0, l
print("the file reads back and adds up")
PY

"$rb" timeline "$work/t.bin" --csv "$work/t.csv" >"$work/tl.out" 2>"$work/err" || fail "railbench timeline failed"
cat "$work/tl.out"
python3 - "$here" "$work/t.bin" "$work/t.csv" <<'PY' || fail "the CSV does not match the file"
import csv, sys
sys.path.insert(0, sys.argv[1])
import read_timeline
t = read_timeline.read(sys.argv[2])
rows = list(csv.reader(open(sys.argv[3], newline="")))
head, body = rows[0], rows[1:]
assert head[0] == "ms" and len(body) == t["buckets"], (head, len(body))
for c, name in enumerate(head[1:], start=1):
    r, rail, s = name.split(".")
    assert sum(int(row[c]) for row in body) == sum(t["series"][(int(r[1:]), int(rail[4:]), s)]), name
print(f"csv: {len(body)} rows x {len(head)} columns match the file")
PY

"$rb" report "$work/r.json" -o "$work/report.html" >/dev/null 2>"$work/err" || fail "report failed"
grep -q "Timeline: what the 5 minute graph hides" "$work/report.html" || fail "the report has no timeline section"
[[ $(grep -o 'class="linechart timeline"' "$work/report.html" | wc -l) -ge 2 ]] || fail "the report has no timeline charts"
# Moved without its timeline: the report still renders and says where the file was.
mkdir "$work/moved" && cp "$work/r.json" "$work/moved/" && mv "$work/t.bin" "$work/t.old"
"$rb" report "$work/moved/r.json" -o "$work/r2.html" >/dev/null 2>"$work/err" || fail "report without the timeline failed"
grep -q "which is not there" "$work/r2.html" || fail "the report does not say the timeline is missing"
# Bad input: named, exit 2, before anything runs.
expect_usage() {  # expect_usage REGEX command...
  local regex=$1
  shift
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  ((rc == 2)) || fail "exit $rc, expected 2, from: $*"
  grep -Eq -- "$regex" "$work/err" || fail "no error matching '$regex' from: $*"
}
expect_usage "--timeline '/nonexistent-dir/t.bin': the directory '/nonexistent-dir' does not exist" \
  "$rb" allreduce -t ofi:shm --timeline /nonexistent-dir/t.bin
expect_usage "--timeline names '$work/r.json', which another output also names" \
  "$rb" allreduce -t ofi:shm --timeline "$work/r.json" --json "$work/r.json"
expect_usage "cannot open timeline '$work/none.bin'" "$rb" timeline "$work/none.bin"
expect_usage "is not a railbench timeline" "$rb" timeline "$work/r.json"
head -c 100 "$work/t.old" >"$work/cut.bin"
expect_usage "is cut short" "$rb" timeline "$work/cut.bin"
echo PASS

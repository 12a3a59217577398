#!/usr/bin/env bash
# `railbench compare --job` on the kept NCCL Inspector files of a made-up job
# (make_inspector_fixtures.py) and the real railbench runs they were made against:
#   job_case.sh RAILBENCH
# The job got 50% of railbench's busbw at one all-reduce size and 80-95% elsewhere: that
# size must come out with its share and ranked first; the all-gather sizes (the
# Inspector's size is per rank) and a size railbench did not measure (interpolated) must
# find their shares too; validate's collectives serve too, from other nodes (a warning).
# Then the refusals: a malformed line (file, line and fix), a job at a rank count
# railbench did not measure, a collective it has no figure for.
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_work
fx=$here/fixtures

# job_rc WANT ARGS...: runs compare --job, prints its output, checks the exit code.
job_rc() {
  local want=$1
  shift
  timeout 30 "$rb" compare --job "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  cat "$work/out" "$work/err"
  ((rc == want)) || fail "compare --job $* exited $rc, expected $want"
}

job_rc 0 "$fx/inspector-job" "$fx/allreduce-shm-4.json" "$fx/allgather-shm-4.json" --json "$work/job.json"
expect_grep "^ +1\. allreduce 256K at 4 ranks: (4[89]|5[012])% of the fabric's busbw" "$work/out" \
  "the size at 50% of the fabric ranked first"
expect_grep "^# not compared: Broadcast 1M at 4 ranks \(21 calls, .*railbench has no Broadcast benchmark" "$work/out"
expect_grep "^compare --job: 6 of 7 collective size\(s\) compared" "$work/out"
python3 - "$work/job.json" <<'EOF' || fail "the --json figures are not the job's shares"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "railbench.compare_job", d["schema"]
rows = {(r["collective"], r["bytes"]): r for r in d["rows"]}
want = {("allreduce", 65536): 0.95, ("allreduce", 262144): 0.50, ("allreduce", 393216): 0.80,
        ("allreduce", 1048576): 0.90, ("allgather", 65536): 0.90, ("allgather", 1048576): 0.85}
for key, share in want.items():
    r = rows[key]
    # Whole-microsecond times and a +-4% jitter about the median call.
    assert abs(r["share"] - share) <= 0.03 * share, (key, r["share"], share)
    assert r["calls"] == 21 and r["nodes"] == "same", r
    assert r["railbench"]["figure"] == ("interpolated" if key[1] == 393216 else "measured"), r
assert rows[("allreduce", 393216)]["railbench"]["between_bytes"] == [262144, 524288]
first = d["rows"][d["shortfalls"][0]]
assert (first["collective"], first["bytes"]) == ("allreduce", 262144), first
assert not rows[("broadcast", 1048576)]["compared"]
lost = [d["rows"][i]["lost_us"] for i in d["shortfalls"]]
assert lost == sorted(lost, reverse=True), lost
EOF

# A line cut short: its file and line, and what to do.
cp -r "$fx/inspector-job" "$work/broken"
bad=$(find "$work/broken" -name '*.log' | sort | head -1)
lines=$(wc -l <"$bad")
printf '{"header":{"id":"0x5eedc0ffee0001","rank":0,"n_ranks"\n' >>"$bad"
job_rc 2 "$work/broken" "$fx/allreduce-shm-4.json"
expect_grep "railbench: error: compare --job: $bad:$((lines + 1)): not JSON .*delete that line" "$work/err"

# 8 ranks, where railbench measured 4; and an all-gather it has no file for here.
job_rc 2 "$fx/allreduce-shm-4.json" "$fx/inspector-8ranks"
expect_grep "nothing of the job could be held against the results given" "$work/err"
expect_grep "AllReduce at 8 ranks \(1M\): the results given have allreduce at 4 rank\(s\), not at 8: run .mpirun -np 8 \.\.\. railbench allreduce -b 1M -e 1M" "$work/err"
expect_grep "AllGather at 8 ranks \(1M\): the results given have no allgather figure" "$work/err"
[[ $(wc -l <"$work/err") -eq 1 ]] || fail "expected one error line"

# validate's collectives (a real run of the simulated 4 x 2 SU: 8 ranks on node01..04)
# hold the 8-rank job's all-reduce, on other nodes: compared, with a warning.
job_rc 0 "$fx/inspector-8ranks" "$fx/validate-netns-healthy.json"
expect_grep "^  allreduce +8 +1M .* measured +different$" "$work/out"
expect_grep "^# warning: allreduce at 8 ranks ran on vm; railbench measured on node01, node02, node03, node04 " "$work/out"
expect_grep "^compare --job: 1 of 2 collective size\(s\) compared" "$work/out"

# An empty Inspector file (a process that never finished a collective) is read as one.
: >"$work/empty.log"
job_rc 0 "$work/empty.log" "$fx/inspector-job" "$fx/allreduce-shm-4.json" "$fx/allgather-shm-4.json"
job_rc 2 "$work/nosuch.log" "$fx/allreduce-shm-4.json"
expect_grep "nosuch.log: no such file or directory" "$work/err"

# The same runs from the run store (--db): ingested, the shares come out as from the files,
# with the store's run as their source.
"$rb" db ingest --db "$work/store.db" "$fx/allreduce-shm-4.json" "$fx/allgather-shm-4.json" >/dev/null ||
  fail "db ingest of the fixtures failed"
job_rc 0 "$fx/inspector-job" --db "$work/store.db" --json "$work/job-db.json"
expect_grep "^ +1\. allreduce 256K at 4 ranks: (4[89]|5[012])% of the fabric's busbw" "$work/out" \
  "the size at 50% of the fabric ranked first, from the store"
expect_grep "^compare --job: 6 of 7 collective size\(s\) compared" "$work/out"
python3 - "$work/job.json" "$work/job-db.json" <<'EOF' || fail "the store's shares are not the files' shares"
import json, sys
files, db = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda r: (r["collective"], r["bytes"])
f = {key(r): r for r in files["rows"] if r["compared"]}
d = {key(r): r for r in db["rows"] if r["compared"]}
assert f.keys() == d.keys(), (sorted(f), sorted(d))
for k in f:
    assert abs(f[k]["share"] - d[k]["share"]) <= 1e-3 * f[k]["share"], (k, f[k]["share"], d[k]["share"])
    assert d[k]["railbench"]["source"].startswith("store "), d[k]["railbench"]
EOF
# No store there (exit 1), a store without a collective sweep, and --db without --job:
# said, exit 2.
job_rc 1 "$fx/inspector-job" --db "$work/none.db"
expect_grep "there is none: ingest runs first" "$work/err"
"$rb" db ingest --db "$work/sendrecv.db" "$fx/sendrecv-shm.json" >/dev/null || fail "db ingest of sendrecv failed"
job_rc 2 "$fx/inspector-job" --db "$work/sendrecv.db"
expect_grep "holds no complete collective sweep" "$work/err"
timeout 30 "$rb" compare "$fx/allreduce-shm-4.json" "$fx/allreduce-shm-4.json" --db "$work/store.db" \
  >"$work/out" 2>"$work/err" && fail "compare --db without --job exited 0"
expect_grep "leave --db out, or add --job" "$work/err"

# Only results files, or compare's own options: said, exit 2.
job_rc 2 "$fx/allreduce-shm-4.json" "$fx/allgather-shm-4.json"
expect_grep "give the job's NCCL Inspector files" "$work/err"
job_rc 2 "$fx/inspector-job" "$fx/allreduce-shm-4.json" --threshold 10
expect_grep "leave them out" "$work/err"
echo "PASS"

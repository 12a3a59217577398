#!/usr/bin/env bash
# `railbench compare` on real results files from real runs (mpirun, libfabric shm):
#   cases.sh CASE RAILBENCH
# CASE:
#   rerun-allreduce, rerun-sendrecv  the same healthy run twice: no regression (exit 0)
#   incompatible                     another command, another world size, a missing file,
#                                    a file that is not JSON: exit 2, one line naming it
#   outputs                          --json and --csv of a diff: parse, header with units
source "$(dirname "$0")/../support/case.sh"
case_name=$1 rb=$2
case_work

# run NP OUT.json railbench-args...: one run under mpirun with a deadline.
run() {
  local np=$1 out=$2
  shift 2
  rb_mpirun_deadline 120 "$np" "$rb" "$@" --json "$out" >"$work/run.out" 2>&1 || { cat "$work/run.out"; fail "railbench $* exited $?"; }
}

# compare_rc WANT BASE NEW [options]: runs compare, prints its output, checks the exit code.
compare_rc() {
  local want=$1
  shift
  timeout 30 "$rb" compare "$@" >"$work/cmp.out" 2>"$work/cmp.err"
  rc=$?
  cat "$work/cmp.out" "$work/cmp.err"
  ((rc == want)) || fail "compare $* exited $rc, expected $want"
}

case $case_name in
  rerun-allreduce)
    # Enough iterations that each run's band shows its noise.
    args=(allreduce -t ofi:shm -b 1K -e 1M -n 200 -w 20)
    run 2 "$work/a.json" "${args[@]}"
    run 2 "$work/b.json" "${args[@]}"
    if ! timeout 30 "$rb" compare "$work/a.json" "$work/b.json" >/dev/null 2>&1; then
      echo "(a regression on the first attempt: rerunning both once, in case the host was busy)"
      run 2 "$work/a.json" "${args[@]}"
      run 2 "$work/b.json" "${args[@]}"
    fi
    compare_rc 0 "$work/a.json" "$work/b.json" --all
    grep -q "^compare allreduce: 0 regression(s).*(44 figures): no regression$" "$work/cmp.out" ||
      fail "expected 44 figures (11 sizes x 2 placements: busbw, time p99) and no regression"
    # A run compared with itself: every figure the same.
    compare_rc 0 "$work/a.json" "$work/a.json"
    grep -q "0 change(s) within the noise, 44 within" "$work/cmp.out" || fail "a run against itself must be all same"
    ;;
  rerun-sendrecv)
    args=(sendrecv -t ofi:shm -b 8 -e 64K -f 8 -n 400 -w 20)
    # Two healthy shm runs on a shared 2-core host drift apart by up to ~34% at 32K (seen
    # in a CI run, twice in a row) while each run's own band stays tight: the band cannot
    # see drift between runs (README), so the threshold is set above it, as the README
    # tells operators to do.
    drift=(--threshold 40%)
    run 2 "$work/a.json" "${args[@]}"
    run 2 "$work/b.json" "${args[@]}"
    # A burst of load from another job during one run makes it really slower (and so a
    # regression, rightly); such a burst rarely hits two attempts. Twice in a row is ours.
    if ! timeout 30 "$rb" compare "$work/a.json" "$work/b.json" "${drift[@]}" >/dev/null 2>&1; then
      echo "(a regression on the first attempt: rerunning both once, in case the host was busy)"
      run 2 "$work/a.json" "${args[@]}"
      run 2 "$work/b.json" "${args[@]}"
    fi
    compare_rc 0 "$work/a.json" "$work/b.json" "${drift[@]}"
    grep -q "^compare sendrecv: 0 regression(s)" "$work/cmp.out" || fail "a healthy rerun reported a regression"
    ;;
  incompatible)
    run 2 "$work/ar2.json" allreduce -t ofi:shm -b 1K -e 64K -n 5
    run 3 "$work/ar3.json" allreduce -t ofi:shm -b 1K -e 64K -n 5
    run 2 "$work/sr.json" sendrecv -t ofi:shm -b 8 -e 64 -n 20
    expect2() {  # expect2 REGEX compare-args...
      local regex=$1
      shift
      compare_rc 2 "$@"
      [[ $(grep -c "railbench: error:" "$work/cmp.err") -eq 1 ]] || fail "expected one error line"
      grep -Eq -- "$regex" "$work/cmp.err" || fail "the error does not say: $regex"
    }
    expect2 "cannot be compared: command: allreduce in .*ar2.json, sendrecv in .*sr.json" "$work/ar2.json" "$work/sr.json"
    expect2 "cannot be compared: world size: 2 in .*ar2.json, 3 in .*ar3.json" "$work/ar2.json" "$work/ar3.json"
    expect2 "compare: .*nosuch.json: cannot read the results file \(no such file" "$work/ar2.json" "$work/nosuch.json"
    echo "not json" >"$work/text.json"
    expect2 "compare: .*text.json: not JSON" "$work/text.json" "$work/ar2.json"
    echo '{"a": 1}' >"$work/other.json"
    expect2 "compare: .*other.json: not a railbench results file" "$work/ar2.json" "$work/other.json"
    expect2 "--threshold 'x5'" "$work/ar2.json" "$work/ar2.json" --threshold x5
    ;;
  outputs)
    run 2 "$work/a.json" allreduce -t ofi:shm -b 1K -e 16K -n 20
    run 2 "$work/b.json" allreduce -t ofi:shm -b 1K -e 16K -n 20
    # Two real runs of tiny sizes: a p99 may differ beyond both runs' noise on a loaded
    # host (a regression, exit 1). This case checks the files, whatever the verdict; the
    # exit code and the verdict in them must agree.
    timeout 30 "$rb" compare "$work/a.json" "$work/b.json" --json "$work/d.json" --csv "$work/d.csv" \
      --threshold 10% >"$work/cmp.out" 2>"$work/cmp.err"
    rc=$?
    cat "$work/cmp.out" "$work/cmp.err"
    ((rc == 0 || rc == 1)) || fail "compare exited $rc, expected 0 (OK) or 1 (a regression)"
    python3 - "$work/d.json" "$work/d.csv" "$rc" <<'PY' || fail "the --json or --csv diff is not what it should be"
import csv, json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "railbench.compare" and d["command"] == "allreduce", d
want = "OK" if sys.argv[3] == "0" else "REGRESSION"
assert d["threshold"] == 0.1 and d["verdict"] == want, (d["verdict"], "exit " + sys.argv[3])
assert len(d["rows"]) == 20, len(d["rows"])
raw = open(sys.argv[2], newline="").read()
assert raw.endswith("\r\n") and "\n" not in raw.replace("\r\n", ""), "RFC 4180 wants CRLF line ends"
rows = list(csv.reader(open(sys.argv[2], newline="")))
assert rows[0][:7] == ["subject", "metric", "unit", "verdict", "old (unit)", "new (unit)", "change (%)"], rows[0]
assert len(rows) == 21, len(rows)
assert {r[2] for r in rows[1:]} == {"GB/s", "us"}
for r, j in zip(rows[1:], d["rows"]):
    assert r[0] == j["subject"] and r[1] == j["metric"] and r[3] == j["verdict"]
    assert abs(float(r[4]) - j["old"]) <= 1e-5 * abs(j["old"]) + 1e-12
print("json and csv: %d rows each" % len(d["rows"]))
PY
    ;;
  *)
    fail "unknown case '$case_name'"
    ;;
esac
echo "PASS: $case_name"

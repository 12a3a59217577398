#!/usr/bin/env bash
# The soft-RoCE cases, run INSIDE the rxe VM (scripts/rxe-vm/run.sh --rails 2), one VM
# boot per group since a boot costs ~30 s under TCG:
#   cases.sh verbs|ofi-verbs|ucx-verbs|bad-input|counters RAILBENCH [VERBS_TESTS]
# Each case is tests/bench/mpi_case.sh: real processes under a real mpirun, results
# validated by check_results.py (every pair on every rail, #wrong 0), all of a group's in
# one Python process at its end: under TCG a Python start takes ~3 s, a case ~10.
# rxe under TCG moves ~20 MB/s, so sizes and iteration counts are small.
source "$(dirname "$0")/../support/case.sh"
group=$1 rb=$2 verbs_tests=${3-}
case_sh=$here/../bench/mpi_case.sh
export RAILBENCH_TEST_DEADLINE=${RAILBENCH_TEST_DEADLINE:-300}
failed=()
case_work
export RAILBENCH_CHECK_BATCH=$work/check-list

run() {  # run NAME NP MODE ARG -- railbench args...
  local name=$1
  shift
  echo "=== $name"
  if RAILBENCH_CHECK_NAME=$name "$case_sh" "$@"; then echo "=== ran: $name"; else
    echo "=== FAILED: $name"
    failed+=("$name")
  fi
}

# sendrecv: small sizes, few bandwidth windows; allreduce: up to 1M, a few iterations.
sr=(-b 8 -e 64K -f 8 -n 50 -w 5 --window 8 --bw-iters 2 -c)
ar=(-b 1K -e 1M -f 8 -n 3 -w 1 -c --slice-bytes 256K)

case $group in
  verbs)
    if [[ -n $verbs_tests ]]; then
      echo "=== verbs transport conformance (ranks as threads, real rxe devices)"
      if timeout 600 "$verbs_tests"; then echo "=== ok: verbs conformance"; else
        echo "=== FAILED: verbs conformance"
        failed+=("verbs conformance")
      fi
    fi
    for np in 2 4; do
      run "verbs sendrecv -np $np, 2 rails" $np expect-ok "--command sendrecv --check --rails 2" -- \
        "$rb" sendrecv -t verbs --rails 2 "${sr[@]}"
      run "verbs allreduce -np $np, 2 rails" $np expect-ok "--command allreduce --check --rails 2" -- \
        "$rb" allreduce -t verbs --rails 2 "${ar[@]}"
    done
    for verb in write read; do
      run "verbs sendrecv --verb $verb -np 2, 2 rails" 2 expect-ok "--command sendrecv --check --rails 2" -- \
        "$rb" sendrecv -t verbs --rails rxe0,rxe1 --verb $verb "${sr[@]}"
    done
    run "verbs allreduce --protocol write -np 3" 3 expect-ok "--command allreduce --check" -- \
      "$rb" allreduce -t verbs --protocol write "${ar[@]}"
    run "verbs alltoall -np 4, 2 rails" 4 expect-ok "--command alltoall --check --rails 2" -- \
      "$rb" alltoall -t verbs --rails 2 -b 4K -e 1M -f 16 -n 3 -w 1 -c
    run "verbs --qps-per-peer 4 uses 4 queue pairs per peer and rail" 2 expect-ok \
      "--command sendrecv --check --rails 2 --channels 4" -- \
      "$rb" sendrecv -t verbs --rails 2 --qps-per-peer 4 "${sr[@]}"
    # KV-cache blocks over verbs writes with immediate, one imm per rail; a small
    # custom model (1 MiB per request) since rxe under TCG moves ~20 MB/s.
    run "verbs kvcache every mode -np 2, 2 rails" 2 expect-ok \
      "--command kvcache --check --rails 2 --modes per-block,coalesced,staged --sizes 4" -- \
      "$rb" kvcache -t verbs --rails 2 --layers 4 --kv-heads 2 --head-dim 64 --tokens 512 --requests 3 -c
    run "verbs --qps-per-peer 3 allreduce -np 3" 3 expect-ok "--command allreduce --check --channels 3" -- \
      "$rb" allreduce -t verbs --qps-per-peer 3 "${ar[@]}"
    # A training step's every kind of op over verbs, checked: TP and PP (dense), then DP
    # with routed EP (MoE); small test models, one timed step each.
    fixtures=$(cd "$(dirname "$0")/../workload/fixtures" && pwd)
    run "verbs workload tp2 pp2 -np 4, 2 rails" 4 expect-ok "--command workload --check --rails 2 --modes tp,pp" -- \
      "$rb" workload -t verbs --rails 2 --model "$fixtures/tiny-dense.json" --tp 2 --pp 2 --seq 64 --micro-batches 2 \
      -n 1 -w 0 -c
    run "verbs workload dp2 ep2 -np 2" 2 expect-ok "--command workload --check --modes dp,ep" -- \
      "$rb" workload -t verbs --model "$fixtures/tiny-moe.json" --dp 2 --ep 2 --experts 4 --seq 64 --micro-batches 2 \
      --layers 2 -n 1 -w 0 -c
    ;;
  ofi-verbs)
    for np in 2 4; do
      run "ofi:verbs sendrecv -np $np, 2 rails" $np expect-ok "--command sendrecv --check --rails 2" -- \
        "$rb" sendrecv -t ofi:verbs --rails 2 "${sr[@]}"
      run "ofi:verbs allreduce -np $np, 2 rails" $np expect-ok "--command allreduce --check --rails 2" -- \
        "$rb" allreduce -t ofi:verbs --rails 2 "${ar[@]}"
    done
    ;;
  ucx-verbs)
    # UCX's own verbs transport on the rxe devices, a rail each (transports/ucx/README.md:
    # what UCX 1.13 needs there). rc_verbs under TCG costs ~4 ms a message, so few of them.
    rails=(--rails rxe0:1,rxe1:1)
    run "ucx:rc_verbs sendrecv -np 2, 2 rails" 2 expect-ok "--command sendrecv --check --rails 2" -- \
      "$rb" sendrecv -t ucx:rc_verbs "${rails[@]}" -b 8 -e 64K -f 8 -n 20 -w 2 --window 8 --bw-iters 2 -c
    run "ucx:rc_verbs allreduce -np 2, 2 rails" 2 expect-ok "--command allreduce --check --rails 2" -- \
      "$rb" allreduce -t ucx:rc_verbs "${rails[@]}" "${ar[@]}"
    # One-sided: puts, each completed by its endpoint's flush.
    run "ucx:rc_verbs sendrecv --verb write -np 2, 2 rails" 2 expect-ok "--command sendrecv --check --rails 2" -- \
      "$rb" sendrecv -t ucx:rc_verbs "${rails[@]}" --verb write -b 8 -e 64K -f 8 -n 20 -w 2 --window 8 --bw-iters 2 -c
    # UCX choosing, on an rxe rail: without the ud_verbs setting its wire-up times out.
    run "ucx (UCX picks) sendrecv --verb read -np 2 on rxe0" 2 expect-ok "--command sendrecv --check" -- \
      "$rb" sendrecv -t ucx --rails rxe0:1 --verb read -b 8 -e 64K -f 8 -n 20 -w 2 --window 8 --bw-iters 2 -c
    ;;
  bad-input)
    run "bad input: a device that does not exist" 2 expect-error "nosuch0.*rxe0.*rxe1" -- \
      "$rb" sendrecv -t verbs --rails nosuch0
    run "bad input: GID index out of range" 2 expect-error "gid-index 999" -- \
      "$rb" sendrecv -t verbs --gid-index 999
    run "bad input: --qps-per-peer 0" 2 expect-error "qps-per-peer" -- \
      "$rb" sendrecv -t verbs --qps-per-peer 0
    echo "=== bad input: a peer that never connects"
    out=$(RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=2 RAILBENCH_ROOT=127.0.0.1:29555 \
      timeout 60 "$rb" sendrecv -t verbs --timeout 5 2>&1)
    rc=$?
    echo "$out"
    if ((rc != 0 && rc != 124)) && grep -q "rank(s) 1 did not arrive" <<<"$out"; then
      echo "=== ok: a peer that never connects"
    else
      echo "=== FAILED: a peer that never connects (exit $rc)"
      failed+=("peer that never connects")
    fi
    ;;
  counters)
    # rxe's real hw_counters move during a sendrecv and land in the results, per rank
    # and rail, next to the figures (both ranks share each rxe device here, so each
    # sees the packets of both directions).
    echo "=== rxe hw_counters move during a sendrecv"
        json=$(mktemp /tmp/rb-counters-XXXXXX.json)
    rb_mpirun_deadline 300 2 "$rb" sendrecv -t verbs --rails 2 -b 64K -e 64K -n 20 -w 2 --window 8 --bw-iters 2 \
      --json "$json"
    "$rb" info | sed -n '/^fabric counters/,$p'
    if python3 - "$json" <<'PY'; then echo "=== ok: rxe counters"; else
import json, sys
doc = json.load(open(sys.argv[1]))
for rank in doc["world"]["ranks"]:
    for rail in rank["rails"]:
        assert any(s.startswith("verbs rxe") and "hw_counters" in s for s in rail["counters"]), rail
counters = doc["results"][0]["counters"]
seen = {(c["rank"], c["rail"]): c["deltas"] for c in counters}
for rank in (0, 1):
    for rail in (0, 1):
        d = seen[(rank, rail)]
        print("rank %d rail %d:" % (rank, rail), {k: v for k, v in d.items() if k.startswith("hw/")})
        assert d.get("hw/sent_pkts", 0) > 0 and d.get("hw/rcvd_pkts", 0) > 0, d
PY
      echo "=== FAILED: rxe counters"
      failed+=("rxe counters")
    fi
    rm -f "$json"
    ;;
  *)
    echo "usage: cases.sh verbs|ofi-verbs|ucx-verbs|bad-input|counters RAILBENCH" >&2
    exit 2
    ;;
esac

# The results files of the cases that ran to exit 0, checked.
if [[ -s $RAILBENCH_CHECK_BATCH ]]; then
  echo "=== results files of $(wc -l <"$RAILBENCH_CHECK_BATCH") case(s)"
  checked=$(python3 "$here/../bench/check_results.py" --batch "$RAILBENCH_CHECK_BATCH")
  rc=$?
  echo "$checked"
  n=${#failed[@]}
  while IFS= read -r name; do failed+=("$name"); done < <(sed -n 's/^=== FAILED: //p' <<<"$checked")
  ((rc == 0 || ${#failed[@]} > n)) || failed+=("the results check itself (exit $rc)")
fi
if ((${#failed[@]})); then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "PASS: $group"

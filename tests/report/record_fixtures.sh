#!/usr/bin/env bash
# Records the report tests' fixtures (tests/report/fixtures/*.json) with a real
# railbench: the collectives, sendrecv, kvcache and workload under mpirun (tcp and shm, small
# sizes), and validate on the simulated 4 x 2 SU of scripts/netns-su, healthy and with
# node03's rail1 cable at 25% of its rate. Needs root (network namespaces).
#   tests/report/record_fixtures.sh build/railbench [OUT_DIR]
# The files are results as railbench writes them; re-record after a schema change.
source "$(dirname "$0")/../support/case.sh"
set -e
rb=$(realpath "$1")
out=${2:-$here/fixtures}
mkdir -p "$out"
mpi=(mpirun --allow-run-as-root --oversubscribe)

# Two runs of each, the second the baseline of the first.
for run in "" -base; do
  "${mpi[@]}" -np 4 "$rb" allreduce -t ofi:tcp -b 1K -e 1M -f 4 -c -n 10 --json "$out/allreduce$run.json" >/dev/null
  "${mpi[@]}" -np 4 "$rb" alltoall -t ofi:tcp -b 1K -e 1M -f 4 -c -n 5 --json "$out/alltoall$run.json" >/dev/null
  "${mpi[@]}" -np 4 "$rb" sendrecv -t ofi:tcp -b 8 -e 256K -f 8 -c -n 100 --bw-iters 5 \
    --json "$out/sendrecv$run.json" >/dev/null
  "${mpi[@]}" -np 2 "$rb" kvcache -t ofi:shm --model llama-3.1-8b --tokens 40,160,640 -c --requests 4 \
    --json "$out/kvcache$run.json" >/dev/null
done
"${mpi[@]}" -np 4 "$rb" workload -t ofi:shm --model "$here/../workload/fixtures/tiny-moe.json" --tp 2 --dp 2 --ep 2 \
  --seq 64 --micro-batches 2 --compute-us 50 -n 4 -c --json "$out/workload.json" >/dev/null
"${mpi[@]}" -np 4 "$rb" allgather -t ofi:tcp -b 1K -e 1M -f 4 -c -n 5 --json "$out/allgather.json" >/dev/null
"${mpi[@]}" -np 4 "$rb" reducescatter -t ofi:tcp -b 1K -e 1M -f 4 -c -n 5 --json "$out/reducescatter.json" >/dev/null
# A run that ends badly: SIGTERM part-way through the sweep leaves status "failed", its
# error and the sizes measured before it.
timeout -s TERM 4 "${mpi[@]}" -np 2 "$rb" allreduce -t ofi:tcp -b 1K -e 256M -f 2 -n 20 \
  --json "$out/allreduce-failed.json" >/dev/null 2>&1 || true

# validate on the simulated SU: its own prefix, so a test's SU elsewhere is untouched.
case_su_up rbrep
"$su/up.sh" --nodes 4 --rails 2 --rate 400
validate() {  # exit 1 is a FAIL verdict: the faulty run's expected outcome
  "$su/mpirun.sh" --slots 2 -- "$rb" validate --config netns-4x2 --json "$out/$1.json" >/dev/null || (($? == 1))
}
validate validate-healthy-base
validate validate-healthy
"$su/fault.sh" degrade node03 rail1 25
validate validate-faulty
"$su/down.sh" >/dev/null

# validate's fabric phase on the simulated 2 SU x 4 spine fabric, su1-leaf0-spine2 at 20%.
export RB_SU_NET=10.150  # the config's fabric section names the fabric's addresses under it
"$su/up.sh" --sus 2 --nodes 4 --rails 2 --spines 4
"$su/fault.sh" degrade su1-leaf0-spine2 20
"$su/mpirun.sh" -- "$rb" validate --config netns-2su-4x2-4spine --fabric-only --json "$out/validate-fabric.json" \
  >/dev/null || (($? == 1))
echo "fixtures in $out:"
ls -l "$out"

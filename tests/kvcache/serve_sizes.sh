#!/usr/bin/env bash
# kvcache --serve with per-request sizes under a real mpirun (2 ranks, shm), every byte
# checked at the decode side (-c), with a hard deadline:
#   serve_sizes.sh uniform|trace MODE RAILBENCH
# uniform: --tokens uniform:40-400 moves from 3 to 25 blocks of 16 tokens per request,
# sizes seen in the JSON span most of that range. trace: --tokens trace with the Mooncake
# fixture moves each request's prompt length, the largest of the replayed ones included.
source "$(dirname "$0")/../support/case.sh"
case_=$1 mode=$2 rb=$3
case_work
# A small custom geometry (2 layers, 1 head of 8, fp16: 32 B per token and plane) keeps
# the largest fixture prompt small; per-request sizes are what is under test.
common=(kvcache --serve -t ofi:shm --layers 2 --kv-heads 1 --head-dim 8 --block-tokens 16 --mode "$mode" -c
  --concurrency 2 --seed 5 --json "$work/r.json")
if [[ $case_ == uniform ]]; then
  args=(--tokens uniform:40-400 --rate 200 --requests 100)
else
  args=(--tokens trace --trace "$here/fixtures/mooncake.jsonl" --time-scale 4)
fi
rb_mpirun_deadline 60 2 "$rb" "${common[@]}" "${args[@]}" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out" "$work/err"
((rc == 0)) || fail "exit code $rc (124: the 60 s deadline)"
grep -q "^# request sizes (--tokens " "$work/out" || fail "no request sizes header line"
python3 - "$work/r.json" "$case_" "$here/fixtures/mooncake.jsonl" <<'PY' || exit 1
import json, math, sys
doc = json.load(open(sys.argv[1]))
e = doc["results"][0]
sz = e["request_sizes"]
blocks, nbytes = sz["blocks"], sz["bytes"]
print(f"blocks min {blocks['min']} p50 {blocks['p50']} max {blocks['max']}, bytes mean {nbytes['mean']:.0f}, "
      f"wrong {e['wrong']}")
assert e["wrong"] == 0, "bytes off the pattern at the decode side"
# 2 layers x 2 planes (K, V) x 16 tokens x 16 B (1 head of 8, fp16) per block.
assert nbytes["max"] == blocks["max"] * 2 * 2 * 16 * 16
assert e["bytes"] == round(nbytes["mean"]), "GB/s must use the mean request"
if sys.argv[2] == "uniform":
    assert blocks["count"] == 100
    assert 3 <= blocks["min"] <= 6 and 22 <= blocks["max"] <= 25, "uniform:40-400 is 3 to 25 blocks"
else:
    lines = [json.loads(l) for l in open(sys.argv[3])]
    want = [max(1, math.ceil(l["input_length"] / 16)) for l in lines[: blocks["count"]]]
    assert blocks["max"] == max(want) and blocks["min"] == min(want), (min(want), max(want))
print("PASS")
PY

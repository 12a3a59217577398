#!/usr/bin/env bash
# kvcache --serve --route under a real mpirun: 1 prefill + 2 decode ranks over shm, a
# Mooncake fixture whose prompts start with one of two system prompts
# (fixtures/mooncake_prefixes.jsonl), every block the decode side received checked (-c),
# with a hard deadline:
#   serve_route.sh prefix|least-loaded RAILBENCH
# prefix: with --decode-cache, blocks a decode rank holds are not sent (bytes saved > 0,
# none of them arrived anyway), each system prompt's requests go to one decode rank, and
# it saves more than round-robin with the same cache; least-loaded: no cache, both decode
# ranks take requests.
source "$(dirname "$0")/../support/case.sh"
route=$1 rb=$2
case_work
# A small custom geometry (2 layers, 1 head of 8, fp16: 32 B per token and plane) keeps
# the largest fixture prompt small; routing and reuse are what is under test.
args=(kvcache --serve -t ofi:shm --layers 2 --kv-heads 1 --head-dim 8 --block-tokens 16 --mode per-block -c
  --concurrency 2 --prefill-ranks 0 --decode-ranks 1,2 --tokens trace --trace "$here/fixtures/mooncake_prefixes.jsonl"
  --time-scale 4 --route "$route" --json "$work/r.json" --csv "$work/r.csv")
[[ $route == prefix ]] && args+=(--decode-cache 16)
rb_mpirun_deadline 60 3 "$rb" "${args[@]}" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out" "$work/err"
((rc == 0)) || fail "exit code $rc (124: the 60 s deadline)"
if [[ $route == prefix ]]; then
  args=("${args[@]/#prefix/round-robin}")
  args=("${args[@]/#$work\/r.json/$work/rr.json}")
  args=("${args[@]/#$work\/r.csv/$work/rr.csv}")
  rb_mpirun_deadline 60 3 "$rb" "${args[@]}" >"$work/out-rr" 2>&1 || { cat "$work/out-rr"; fail "round-robin"; }
fi
grep -q "^# route $route: requests per decode rank 1 [0-9]*, 2 [0-9]*" "$work/out" || fail "no route line"
python3 - "$work/r.json" "$route" "$work/rr.json" "$work/r.csv" <<'PY' || exit 1
import csv, json, sys
doc = json.load(open(sys.argv[1]))
e = doc["results"][0]
r = e["routing"]
print(f"route {r['route']}: saved {r['bytes_saved']} of {r['bytes_total']} B, per decode {r['per_decode']}, "
      f"resent {r['resent_blocks']}, wrong {e['wrong']}")
assert doc["config"]["serve"]["route"] == sys.argv[2]
assert e["wrong"] == 0, "bytes off the pattern at the decode side"
assert r["resent_blocks"] == 0, "a held block was sent again"
row = list(csv.DictReader(open(sys.argv[4])))[0]
assert int(row["bytes_saved"]) == r["bytes_saved"], "the CSV's bytes_saved is not the JSON's"
assert sum(d["requests"] for d in r["per_decode"].values()) == e["requests"] == 40
assert [d["decode"] for d in e["per_decode"]] == [1, 2]
assert [d["requests"] for d in e["per_decode"]] == [r["per_decode"][k]["requests"] for k in ("1", "2")]
assert all(d["requests"] > 0 for d in r["per_decode"].values()), "a decode rank took no request"
if sys.argv[2] == "prefix":
    assert r["bytes_saved"] > 0 and 0 < r["saved_share"] < 1, "shared prefixes saved nothing"
    rr = json.load(open(sys.argv[3]))["results"][0]["routing"]
    print(f"round-robin with the same cache: saved {rr['bytes_saved']} B")
    assert rr["route"] == "round-robin" and r["bytes_saved"] > rr["bytes_saved"], "prefix must save more"
else:
    assert r["bytes_saved"] == 0
print("PASS")
PY

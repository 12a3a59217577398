#!/usr/bin/env bash
# Bad inputs that must be refused at once: exit 2 and one "railbench: error:" line
# matching a regex, within 20 s, never a hang, never the host's memory.
#   inputs.sh path/to/railbench
# Single-rank cases run the binary directly (the check comes before any peer is
# needed); two-rank cases start both ranks over the TCP bootstrap (RAILBENCH_ROOT).
source "$(dirname "$0")/../support/case.sh"
rb=$1
case_work
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
}
case_on_exit cleanup
failures=0

# check NAME RC ERRFILE REGEX: exit code 2 and exactly one error line matching REGEX.
check() {
  local name=$1 rc=$2 err=$3 regex=$4
  local lines
  lines=$(grep -c '^railbench: error:' "$err")
  if ((rc != 2)) || ((lines != 1)) || ! grep '^railbench: error:' "$err" | grep -E -- "$regex" >/dev/null; then
    echo "FAIL: $name: exit $rc (want 2), $lines error line(s) (want 1 matching /$regex/):"
    head -c 2000 "$err"
    echo
    failures=$((failures + 1))
  elif (($(wc -l <"$err") != 1)); then
    echo "FAIL: $name: more than one line on stderr:"
    head -c 2000 "$err"
    failures=$((failures + 1))
  else
    echo "ok: $name: $(cat "$err")"
  fi
}

# case NAME REGEX [env VAR=... --] railbench args...: one rank, no launcher.
case1() {
  local name=$1 regex=$2
  shift 2
  env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u RAILBENCH_ROOT \
    timeout --kill-after=5 20 "$@" >"$work/out" 2>"$work/err" </dev/null
  check "$name" $? "$work/err" "$regex"
}

# case2 NAME REGEX "ENV0" "ENV1" [ "ENV2" ] -- railbench args...: ranks over the TCP
# bootstrap, each with its own environment words; rank 0's exit and stderr are checked.
case2() {
  local name=$1 regex=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  local port=$((20000 + RANDOM % 20000)) i
  local others=()
  for ((i = 1; i < ${#envs[@]}; i++)); do
    # shellcheck disable=SC2086
    env RAILBENCH_ROOT=127.0.0.1:$port ${envs[i]} timeout --kill-after=5 20 "$@" >/dev/null 2>"$work/err$i" &
    others+=($!)
    pids+=($!)
  done
  # shellcheck disable=SC2086
  env RAILBENCH_ROOT=127.0.0.1:$port ${envs[0]} timeout --kill-after=5 20 "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  for p in "${others[@]}"; do wait "$p"; done
  check "$name" $rc "$work/err" "$regex"
}

# ---- inputs that would take the host's memory: refused with their bound ----
case1 "--rails 999" "--rails 999 is more than the 64 rails" "$rb" allreduce -t ofi:tcp --rails 999 -b 8 -e 8
case1 "-b 1 -e 1G -i 1" "more than 10000 sizes" "$rb" allreduce -t ofi:tcp -b 1 -e 1G -i 1
mk_config() {
  printf '{"nodes": "%s", "gpus_per_node": 1, "transport": "ofi:tcp", "rails": [{"gpu": 0, "nic": "eth0", "speed_gbps": 100}]}' \
    "$1" >"$2"
}
mk_config 'node[0-999999999]' "$work/billion.json"
case1 "nodes node[0-999999999]" "more than 4096 names" "$rb" validate --config "$work/billion.json" --plan
mk_config 'node[1-100000]' "$work/lakh.json"
case1 "nodes node[1-100000] --plan" "more than 4096 names" "$rb" validate --config "$work/lakh.json" --plan
python3 -c "import sys; d=int(sys.argv[1]); print('{\"nodes\": ' + '['*d + ']'*d + '}')" 100000 >"$work/deep.json"
case1 "config nested 100,000 deep" "nested more than 64 levels" "$rb" validate --config "$work/deep.json" --plan
python3 -c "import sys; d=int(sys.argv[1]); print('{\"nodes\": ' + '['*d + ']'*d + '}')" 50000 >"$work/deep50.json"
case1 "config nested 50,000 deep" "nested more than 64 levels" "$rb" validate --config "$work/deep50.json" --plan
kv=(kvcache -t ofi:tcp --rails lo --max-mem 20G --mode per-block)
case2 "kvcache --tokens 1000000000 (block tables)" "block tables and copy plans" \
  "RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=2" "RAILBENCH_RANK=1 RAILBENCH_WORLD_SIZE=2" -- \
  "$rb" "${kv[@]}" --tokens 1000000000 --layers 1 --kv-heads 1 --head-dim 1

# ---- small inputs that must be errors (negative counts, bad ports, bad numbers) ----
case1 "-n -1" "iters.*-1.*1 or more" "$rb" allreduce -t ofi:tcp -b 8 -e 8 -n -1
case1 "-w -1" "warmup-iters.*-1.*0 or more" "$rb" allreduce -t ofi:tcp -b 8 -e 8 -w -1
case1 "-f -1" "step-factor.*-1.*2 or more" "$rb" allreduce -t ofi:tcp -b 8 -e 1K -f -1
case1 "-i -1" "step-bytes.*-1.*1 or more" "$rb" allreduce -t ofi:tcp -b 8 -e 1K -i -1
case1 "--timeout nan" "--timeout nan must be" "$rb" allreduce -t ofi:tcp -b 8 -e 8 --timeout nan
case1 "--timeout inf" "--timeout inf must be" "$rb" allreduce -t ofi:tcp -b 8 -e 8 --timeout inf
case1 "RAILBENCH_ROOT port 0" "port '0' is not a port number" \
  env RAILBENCH_ROOT=127.0.0.1:0 RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=1 "$rb" allreduce -t ofi:tcp -b 8 -e 8
case1 "RAILBENCH_ROOT port 70000" "port '70000' is not a port number" \
  env RAILBENCH_ROOT=127.0.0.1:70000 RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=1 "$rb" allreduce -t ofi:tcp -b 8 -e 8
case1 "RAILBENCH_RANKS_PER_NODE=abc" "RAILBENCH_RANKS_PER_NODE='abc' is not a whole number" \
  env RAILBENCH_RANKS_PER_NODE=abc "$rb" allreduce -t ofi:tcp -b 8 -e 8
mkfifo "$work/fifo.json"
case1 "config path is a fifo" "is not a regular file \(a fifo\)" "$rb" validate --config "$work/fifo.json" --plan
case2 "world-size mismatch" "RAILBENCH_WORLD_SIZE=3, rank 0 with 2" \
  "RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=2" "RAILBENCH_RANK=1 RAILBENCH_WORLD_SIZE=3" -- \
  "$rb" allreduce -t ofi:tcp -b 8 -e 8 --timeout 10
case2 "duplicate ranks" "two processes were started with RAILBENCH_RANK=1" \
  "RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=3" "RAILBENCH_RANK=1 RAILBENCH_WORLD_SIZE=3" \
  "RAILBENCH_RANK=1 RAILBENCH_WORLD_SIZE=3" -- "$rb" allreduce -t ofi:tcp -b 8 -e 8 --timeout 10

# Model presets: a duplicate refuses the run naming both files; absurd custom geometry.
mkdir -p "$work/configs/models"
echo '{"name": "tiny", "layers": 2, "kv_heads": 1, "head_dim": 8}' >"$work/configs/models/a.json"
echo '{"name": "tiny", "layers": 4, "kv_heads": 1, "head_dim": 8}' >"$work/configs/models/b.json"
case2 "two presets with the same name" "a.json and .*b.json both define" \
  "RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=2 RAILBENCH_CONFIG_DIR=$work/configs" \
  "RAILBENCH_RANK=1 RAILBENCH_WORLD_SIZE=2 RAILBENCH_CONFIG_DIR=$work/configs" -- \
  "$rb" "${kv[@]}" --model tiny --tokens 64
case2 "layers and kv_heads 2^24" "layers.*from 1 to 4096" \
  "RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=2" "RAILBENCH_RANK=1 RAILBENCH_WORLD_SIZE=2" -- \
  "$rb" "${kv[@]}" --layers 16777216 --kv-heads 16777216 --head-dim 64 --tokens 64
case2 "kv bytes per token past the bound" "MiB of KV per token" \
  "RAILBENCH_RANK=0 RAILBENCH_WORLD_SIZE=2" "RAILBENCH_RANK=1 RAILBENCH_WORLD_SIZE=2" -- \
  "$rb" "${kv[@]}" --layers 4096 --kv-heads 1048576 --head-dim 64 --tokens 64

if ((failures)); then
  fail "$failures case(s)"
fi
echo "PASS"

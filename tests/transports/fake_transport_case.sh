#!/usr/bin/env bash
# A transport registered from test code alone (fake_transport_register.cc, linked into
# railbench_with_fake) shows up everywhere bench/ asks the registry: the -t help line
# and its own --fake-* option, `info`, the unknown-transport error, a run with -t fake
# whose option reaches the transport, and the refusal of one transport's options with
# another -t (aliases included).
# Usage: fake_transport_case.sh RAILBENCH_WITH_FAKE
set -uo pipefail
rb=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

# expect NAME EXIT_WANTED REGEX -- COMMAND...: COMMAND's exit status and output.
expect() {
  local name=$1 want=$2 regex=$3
  shift 4
  local out rc
  out=$(timeout 120 "$@" 2>&1)
  rc=$?
  if [[ $want == ok && $rc -ne 0 ]] || [[ $want == error && ($rc -eq 0 || $rc -ge 124) ]]; then
    echo "FAIL $name: exit $rc (want $want) from: $*"
    echo "$out" | tail -5
    fails=$((fails + 1))
  elif ! grep -E -- "$regex" >/dev/null <<<"$out"; then
    echo "FAIL $name: no line matching '$regex' from: $*"
    echo "$out" | tail -5
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

expect "-t help lists fake" ok 'Transport\[:provider\]: ofi.*, fake$' -- "$rb" allreduce --help
expect "help lists --fake-max-msg-kib" ok '^ +--fake-max-msg-kib INT=1024 +fake: largest message' -- "$rb" allreduce --help
expect "info lists fake as built" ok '^transports built in: .*fake$' -- "$rb" info
expect "info prints fake's section" ok '^fake \(-t fake\): the in-memory loopback' -- "$rb" info
expect "unknown transport names fake" error "unknown transport 'fakes': this build has .*fake" -- "$rb" allreduce -t fakes
expect "-t fake with a provider" error "-t fake takes no provider" -- "$rb" allreduce -t fake:x
expect "--fake-max-msg-kib refused with -t ofi" error \
  '^.*--fake-max-msg-kib applies to -t fake; libfabric chooses these itself \(drop it for -t ofi\)' -- \
  "$rb" allreduce -t ofi:shm --fake-max-msg-kib 64
if "$rb" info 2>/dev/null | grep -E '^transports built in: .*verbs' >/dev/null; then
  expect "--gid-index (alias) refused with -t fake" error \
    '--verbs-gid-index \(--gid-index\) applies to -t verbs; the loopback has no such setting \(drop it for -t fake\)' -- \
    "$rb" allreduce -t fake --gid-index 3
  expect "--verbs-qps-per-peer and --gid-index refused with -t ofi" error \
    '--verbs-gid-index \(--gid-index\) and --verbs-qps-per-peer \(--qps-per-peer\) apply to -t verbs; libfabric chooses these itself \(drop them for -t ofi\)' -- \
    "$rb" allreduce -t ofi:shm --gid-index 1 --verbs-qps-per-peer 4
fi

json=$work/fake.json
expect "allreduce -t fake --fake-max-msg-kib 64 runs" ok '# results: ' -- \
  "$rb" allreduce -t fake --fake-max-msg-kib 64 -b 8 -e 4K -n 2 -w 1 -c --json "$json"
if ! python3 - "$json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
t = d["transport"]
assert t["name"] == "loopback", t
assert t["caps"]["max_msg_size"] == 64 * 1024, t  # --fake-max-msg-kib reached the factory
assert t.get("fake") is True, t  # the entry's results details
assert d["config"]["transport"] == "fake", d["config"]
assert d["results"], "no results"
print("ok   results record the fake transport, its option and its details")
PY
  echo "FAIL results of -t fake: $json"
  fails=$((fails + 1))
fi

((fails == 0)) || { echo "$fails check(s) failed"; exit 1; }

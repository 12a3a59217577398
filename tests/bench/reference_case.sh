#!/usr/bin/env bash
# The raw-libfabric reference (bench/reference/fi_reference.c) that the benchmark scripts
# set beside railbench: its 4-iovec write mode (kvcache-modes.sh's per-block baseline)
# runs over shm under a real mpirun and prints one well-formed line per size; a bad IOV
# is refused with exit 2.
#   reference_case.sh FI_REFERENCE
source "$(dirname "$0")/../support/case.sh"
set -e
ref=$1
out=$(rb_mpirun_deadline 60 2 "$ref" oneway shm 1048576 4194304 4 5 1 write 32768 4)
echo "$out"
python3 - "$out" <<'PY'
import sys
lines = sys.argv[1].strip().splitlines()
assert len(lines) == 2, f"expected 2 sizes (1M, 4M), got {lines}"
for line, size in zip(lines, (1048576, 4194304)):
    f = line.split()
    assert len(f) == 5 and int(f[0]) == size, f"bad line {line!r}"
    assert all(float(x) > 0 for x in f[1:]), f"non-positive time or bandwidth in {line!r}"
print("fi_reference: 2 sizes, 4 iovecs per write, ok")
PY
rc=0
rb_mpirun_deadline 60 2 "$ref" oneway shm 1048576 1048576 1 5 1 send 32768 4 >/dev/null 2>&1 || rc=$?
if ((rc != 2)); then
  echo "fi_reference accepted IOV 4 with send (exit $rc), expected exit 2" >&2
  exit 1
fi
echo "fi_reference: IOV with send refused (exit 2)"

#!/usr/bin/env python3
"""The shape of a railbench results file: what a reader of the JSON depends on.

Keys, value types and the words railbench chooses (command, verdict, severity, kind,
algo, status, ...) are kept; figures (every number), timestamps and what depends on the
machine or the moment (hosts, addresses, paths, argv, error texts) become placeholders.
Arrays become the sorted set of their elements' shapes, so a run with more sizes or
pairs has the same shape as one with fewer. Two runs of the same command before and
after a refactoring must have equal shapes: that is the JSON compatibility test.

  json_shape.py RESULTS.json                 print the shape
  json_shape.py RESULTS.json --expect SHAPE [--ignore FIELD]  exit 1 with a diff when they differ
"""
import argparse
import difflib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402

# Fields whose values belong to the moment or the machine, not to the schema.
VOLATILE = {
    "started_at", "finished_at", "updated_at", "host", "hosts_list", "address", "fabric",
    "argv", "file", "error", "reason", "subject", "name", "provider", "device", "pci_bus_id",
    "netdev", "gid", "ipv4", "path", "json", "node", "nodes_expr", "su", "nic", "version",
    "railbench_version", "git_commit", "commit",
}
# Added after the shape was recorded; new optional fields a reader may ignore (bad_nodes:
# validate's drain list, checked by tests/netns/cases.sh; launcher: world.launcher;
# counters, counters_a, counters_b: the fabric counters that moved, which vary by machine
# and run, checked by tests/lib/test_counters.cc and the netns lossy case; burn_in:
# --duration / --cycles only; test_s: the seconds a validate pair test took, which a burn-in
# window divides its bytes by; cabling: validate's cabling check, checked by the netns
# healthy and swapped cases; pkeys: an InfiniBand port's P_Key table in validate's
# inventory, isolation and tenant_collectives: validate with tenants, checked by
# tests/validate/test_tenants.cc and the netns tenants case; bisection: validate's
# tests.bisection, checked by the netns bisection case; run_id: the run store's key, and
# config.rel_bw_below_median: the threshold the store's trends use, checked by tests/db;
# code: a finding's reason code, checked by tests/validate/test_reason_codes.cc; cpus and
# own_core: a rank's CPUs and whether it had one to itself, which vary by machine, checked
# by tests/bench/own_core_case.sh; fabric_link: a fabric finding's link, checked by
# tests/validate/test_fabric_flows.cc and tests/db/test_store.cc).
ADDED = {"railbench_commit", "updated_at", "launcher", "bad_nodes", "counters", "counters_a", "counters_b", "burn_in",
         "test_s", "cabling", "pkeys", "isolation", "tenant_collectives",
         "bisection", "run_id", "rel_bw_below_median", "code", "cpus", "own_core",
         "fabric_link"}


def shape(value, key=None):
    if isinstance(value, dict):
        return {k: shape(v, k) for k, v in sorted(value.items()) if k not in ADDED}
    if isinstance(value, list):
        seen = {json.dumps(shape(v, key), sort_keys=True) for v in value}
        return [json.loads(s) for s in sorted(seen)]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return "<int>"
    if isinstance(value, float):
        return "<float>"
    if key in VOLATILE:
        return "<str>"
    return value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--expect", help="a shape recorded earlier (JSON)")
    ap.add_argument("--ignore", action="append", default=[],
                    help="a top-level field whose contents depend on the run (e.g. findings)")
    args = ap.parse_args()
    doc = json.load(open(args.results))
    for field in args.ignore:
        doc.pop(field, None)
    got = shape(doc)
    text = json.dumps(got, indent=1, sort_keys=True).splitlines()
    if not args.expect:
        print("\n".join(text))
        return 0
    expected = json.load(open(args.expect))
    for field in args.ignore:
        expected.pop(field, None)
    want = json.dumps(expected, indent=1, sort_keys=True).splitlines()
    if got == expected:
        print(f"json shape: {args.results} matches {args.expect}")
        return 0
    diff = "\n".join(difflib.unified_diff(want, text, "expected", "got", lineterm="", n=2))
    rbtest.fail(f"the shape of {args.results} differs from {args.expect} (- expected, + got):\n{diff}")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prints the include graph between railbench's folders and fails on an edge that runs
the wrong way (scripts/dev/ARCHITECTURE.md says why).

  scripts/dev/include-graph.py [--root DIR] [--quiet]

A file belongs to the longest folder prefix in LAYERS below; `#include "a/b.h"` from it
is an edge to the folder that holds a/b.h. An edge is allowed when the target folder is
the file's own or one of the prefixes its layer lists. Exit 0 when every edge is
allowed, 1 when any is not (each named with the file and line), 2 on bad use."""
import argparse
import os
import re
import sys
from collections import defaultdict

LIB = ["lib/core", "lib/runtime", "lib/transport", "lib/results", "lib/observe"]
# folder -> the folders it may include (its own is always allowed). Order: bottom first.
LAYERS = {
    "lib/core": [],
    "lib/runtime": ["lib/core"],
    "lib/transport": ["lib/core", "lib/runtime"],
    "lib/results": ["lib/core", "lib/runtime"],
    "lib/observe": ["lib/core", "lib/runtime", "lib/transport", "lib/results"],
    # The run store reads results documents; only the commands, the runner and the offline readers use it.
    "lib/store": ["lib/core", "lib/runtime", "lib/results"],
    # Each transport implements lib's interface and knows no other transport.
    "transports/ofi": LIB,
    "transports/ucx": LIB,
    "transports/verbs": LIB,
    "transports/nccl": LIB,
    "transports": LIB,
    # Algorithms are written only against lib/. The features built on them (the KV-cache
    # transfer, a training step's workload) may use the collectives, never one another.
    "collectives": LIB,
    "collectives/kvcache": LIB + ["collectives"],
    "collectives/workload": LIB + ["collectives"],
    # bench/: kinds < runner < cli < commands, offline < main. The result-kind registry
    # (kinds) is below both the readers (runner's CSV, offline) and the commands whose
    # folders register their kinds, naming parts from offline's public headers: so
    # commands may include bench/offline/report and bench/offline/compare, never the reverse.
    # No transport is named above transports/: each registers itself (lib/transport/registry.h).
    "bench/kinds": LIB,
    "bench/runner": LIB + ["collectives", "bench/kinds", "lib/store"],
    "bench/cli": LIB + ["bench/runner"],
    # validate --db reads the run store's history of the links it judges.
    "bench/commands": LIB + ["collectives", "bench/kinds", "bench/runner", "bench/cli", "bench/offline/report",
                             "bench/offline/compare", "lib/store"],
    "bench/offline": LIB + ["bench/kinds", "bench/cli", "lib/store"],
    "bench/main.cc": LIB + ["bench/runner", "bench/cli"],
    # Tests may include what they test; their support code only lib/ and itself.
    "tests/support": LIB,
    "tests": LIB + ["lib/store", "collectives", "transports", "bench", "tests/support"],
}
# Within bench/commands and bench/offline each command folder is its own unit: one
# command does not include another's code.
PER_CHILD = ["bench/commands", "bench/offline", "transports"]
# The feature folders under collectives/: "collectives" in their lists covers the
# algorithms, not a sibling feature.
FEATURES = ["collectives/kvcache", "collectives/workload"]
SOURCES = (".h", ".cc", ".cu", ".c")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# bench/ asks lib/ what this build has (the transport registry, mpi_bootstrap_built) and
# never tests a build macro itself: a new transport or bootstrap must not need an edit there.
BUILD_MACRO = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif)\b.*\bRAILBENCH_HAVE_")


def folder_of(path):
    """The node a path belongs to: its LAYERS prefix, one level deeper under PER_CHILD."""
    best = None
    for prefix in LAYERS:
        if path == prefix or path.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best):
                best = prefix
    if best is None:
        return None, None
    node = best
    if best in PER_CHILD:
        rest = path[len(best) + 1:].split("/")
        if len(rest) > 1:
            node = best + "/" + rest[0]
    return best, node


def allowed(src_layer, src_node, dst_path):
    dst_layer, dst_node = folder_of(dst_path)
    if dst_node is None:
        return True  # a generated or system-like header: not ours to judge
    if dst_node == src_node:
        return True
    if src_layer in FEATURES and dst_layer in FEATURES:
        return False  # one feature does not include another's code
    for prefix in LAYERS[src_layer]:
        if dst_path == prefix or dst_path.startswith(prefix + "/"):
            # A command folder may include the shared layers, not a sibling command.
            if src_layer in PER_CHILD and dst_layer == src_layer:
                return False
            return True
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--quiet", action="store_true", help="print only the edges that run the wrong way")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "lib")):
        print(f"include-graph: {root} has no lib/: give the source tree with --root", file=sys.stderr)
        return 2
    edges = defaultdict(int)
    bad = []
    for top in ("lib", "transports", "collectives", "bench", "tests"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("build"))
            for name in sorted(filenames):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                src_layer, src_node = folder_of(path)
                if src_layer is None:
                    continue
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        if path.startswith("bench/") and BUILD_MACRO.match(line):
                            bad.append(f"{path}:{lineno}: tests a build macro ({line.strip()}): ask lib/ what the "
                                       "build has instead")
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        dst = m.group(1)
                        if not os.path.exists(os.path.join(root, dst)):
                            continue  # relative to the file, or generated: same folder
                        _, dst_node = folder_of(dst)
                        if dst_node is None or dst_node == src_node:
                            continue
                        edges[(src_node, dst_node)] += 1
                        if not allowed(src_layer, src_node, dst):
                            bad.append(f"{path}:{lineno}: includes {dst} ({src_node} -> {dst_node} runs the wrong way)")
    if not args.quiet:
        width = max((len(a) for a, _ in edges), default=0)
        for (a, b), n in sorted(edges.items()):
            print(f"{a:<{width}} -> {b}  ({n})")
    for line in bad:
        print(line)
    if bad:
        print(f"include-graph: {len(bad)} edge(s) run the wrong way: move the code down a layer, or pass "
              "what the lower layer needs as a parameter (scripts/dev/ARCHITECTURE.md)", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"include-graph: {len(edges)} edges between folders, none upward")
    return 0


if __name__ == "__main__":
    sys.exit(main())

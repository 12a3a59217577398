#!/usr/bin/env python3
"""roce_paths.sh's verdict: do railbench's traced paths match where the queue pairs'
packets went?

  roce_paths_check.py WORK

WORK holds r.json (sendrecv -t verbs --paths 1, rank 0 on rxeA behind leaf0, rank 1 on
rxeB behind leaf1) and spine0.json and spine1.json (each spine's nftables set: bytes per
UDP source port of A's RoCE packets it forwarded). The checker runs traceroute -U with
three of rank 0's queue pairs' ports itself. Exit 0 when everything matches, 1 with
every mismatch."""
import json
import os
import re
import subprocess
import sys

SPINE_OF = {"10.10.0.2": "spine0", "10.11.0.2": "spine1", "10.20.0.2": "spine0", "10.21.0.2": "spine1"}
FIRST_HOP = {0: "10.1.0.1", 1: "10.2.0.1"}
FAR_LEAF = {("spine0", 0): "10.20.0.1", ("spine1", 0): "10.21.0.1",
            ("spine0", 1): "10.10.0.1", ("spine1", 1): "10.11.0.1"}
QPS = 8  # --qps-per-peer
# A data queue pair that carried sends moved at least two 64 KiB messages (2 bandwidth
# windows of 8, round-robin over the 8 queue pairs) over its port; the probes of TTL 3
# and more cross a spine too, with the same port, a few hundred bytes each.
CARRIED = 64 * 1024


def check_traces(paths, bad):
    """Every flow of both ranks: leaf > spine > far leaf, a RoCE v2 port pair."""
    for r in (0, 1):
        mine = [f for f in paths if f["rank"] == r]
        if len(mine) != 2 * QPS:
            bad.append(f"rank {r}: {len(mine)} flows traced, want {2 * QPS} ({QPS} queue pairs a role, data and rma)")
        for f in mine:
            hops = [h["address"] for h in f["hops"]]
            spine = SPINE_OF.get(hops[1]) if len(hops) > 1 else None
            ok = (0xC000 <= f["src_port"] <= 0xFFFF and f["dst_port"] == 4791 and len(hops) >= 3
                  and hops[0] == FIRST_HOP[r] and spine is not None and hops[2] == FAR_LEAF[(spine, r)])
            if not ok:
                bad.append(f"rank {r} qp {f['qpn']} ({f['role']}) port {f['src_port']}: path {hops}")
            f["spine"] = spine


def counted_bytes(work):
    """{source port: {spine: bytes}} from the two spines' counters."""
    counted = {}
    for s in ("spine0", "spine1"):
        with open(os.path.join(work, s + ".json")) as fh:
            for item in json.load(fh)["nftables"]:
                for e in item.get("set", {}).get("elem", []):
                    counted.setdefault(e["elem"]["val"], {})[s] = e["elem"]["counter"]["bytes"]
    return counted


def check_counters(ports, counted, bad):
    """Each port that carried traffic is a listed queue pair's, and crossed its traced spine alone."""
    carried = 0
    for port, where in sorted(counted.items()):
        big = {s: b for s, b in where.items() if b > CARRIED}
        if not big:
            continue
        carried += 1
        f = ports.get(port)
        if f is None:
            bad.append(f"source port {port} carried {big} bytes but no listed queue pair has it: "
                       "railbench's port is not the one the driver put on the wire")
        elif set(where) != {f["spine"]}:
            bad.append(f"qp {f['qpn']} ({f['role']}, port {port}) traced via {f['spine']}, "
                       f"its packets crossed {where}")
    data = sum(1 for f in ports.values() if f["role"] == "data")
    if carried < data:
        bad.append(f"{carried} source ports carried the sends, want at least the {data} data queue pairs")
    return carried


def check_traceroute(ports, bad):
    """traceroute -U with the same ports names the same spine at hop 2 (three queue pairs)."""
    for port in sorted(ports)[:3]:
        run = subprocess.run(["traceroute", "-U", "-p", "4791", f"--sport={port}", "-s", "10.1.0.2", "-n", "-q", "1",
                              "-m", "3", "-w", "1", "10.2.0.2"], capture_output=True, text=True, timeout=30)
        m = re.search(r"^ 2  (\S+)", run.stdout, re.M)
        said = SPINE_OF.get(m.group(1)) if m else None
        if said != ports[port]["spine"]:
            bad.append(f"traceroute for port {port} says {run.stdout + run.stderr!r}, railbench {ports[port]['spine']}")


def main():
    work = sys.argv[1]
    with open(os.path.join(work, "r.json")) as fh:
        doc = json.load(fh)
    paths = doc.get("paths")
    if not paths:
        print("the results have no paths")
        return 1
    bad = []
    check_traces(paths, bad)
    ports = {f["src_port"]: f for f in paths if f["rank"] == 0}
    seen = {f["spine"] for f in ports.values()}
    if seen != {"spine0", "spine1"}:
        bad.append(f"rank 0's {2 * QPS} queue pairs crossed only {sorted(s for s in seen if s)}")
    carried = check_counters(ports, counted_bytes(work), bad)
    check_traceroute(ports, bad)
    print(f"{len(paths)} flows traced; {carried} source ports carried traffic; "
          f"rank 0's queue pairs crossed {sorted(s for s in seen if s)}; {len(bad)} mismatch(es)")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The run store at a fleet's scale: a year of nightly validate runs of one 32 x 8 SU
(synthetic results files of validate's shape: every NIC's link figures, every rail pair
test, one NIC that loses 0.4% of its bandwidth a night over the last 30 nights), ingested with `railbench db
ingest`, then the time of `history` (a NIC, a pair link) and `db trends` on that store,
and the store's size per run.

  scripts/bench/db-scale.py BUILD_DIR [--runs 365] [--nodes 32] [--rails 8] [--keep DIR]
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time


def validate_doc(day, runs, nodes, rails, rng):
    names = ["gpu%04d" % (i + 1) for i in range(nodes)]
    started = time.strftime("%Y-%m-%dT02:00:00Z", time.gmtime(1767225600 + day * 86400))
    doc = {"schema": "railbench.result", "schema_version": 1, "railbench_version": "0.1.0",
           "run_id": "%032x" % (day + 1), "command": "validate", "started_at": started, "finished_at": started,
           "status": "complete", "verdict": "PASS", "transport": {"name": "verbs", "rails": rails},
           "config": {"su": "su-32x8", "nodes": "gpu[0001-%04d]" % nodes, "rel_bw_below_median": 0.15},
           "world": {"size": nodes * rails, "ranks": []}, "results": [], "findings": [], "rails": [],
           "rail_pairs": []}
    for r in range(rails):
        links = []
        for n in range(nodes):
            drift = 1 - 0.004 * max(0, day - (runs - 30)) if (n, r) == (7, 3) else 1
            bw = 46.5 * drift * (1 + rng.gauss(0, 0.01))
            links.append({"node": names[n], "pairs": nodes - 1, "failed": 0, "tx_gbs": bw,
                          "rx_gbs": bw * (1 + rng.gauss(0, 0.005)), "bidir_gbs": 2 * bw, "lat_p50_us": 2.1,
                          "lat_p99_us": 3.5})
        doc["rails"].append({"rail": r, "nodes": names, "links": links})
        for a in range(nodes):
            for b in range(a + 1, nodes):
                doc["rail_pairs"].append({"phase": "rail", "ok": True, "node_a": a, "node_b": b, "rail_a": r,
                                          "rail_b": r, "bw_ab": 46.5 + rng.gauss(0, 0.3),
                                          "bw_ba": 46.5 + rng.gauss(0, 0.3), "lat_p50": 2.1, "lat_p99": 3.4})
    return doc


def timed(args):
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr[-500:]))
    return time.monotonic() - t0, int(p.stderr.strip().splitlines()[-1]) / 1024, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=365)
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--rails", type=int, default=8)
    ap.add_argument("--keep")
    a = ap.parse_args()
    rb = os.path.join(a.build, "railbench")
    if not os.access(rb, os.X_OK):
        sys.exit("db-scale: no railbench in %s: build it first (scripts/build.sh)" % a.build)
    work = a.keep or tempfile.mkdtemp(prefix="rb-db-scale-")
    os.makedirs(work, exist_ok=True)
    db = os.path.join(work, "fleet.db")
    rng = random.Random(1)
    try:
        ingest_s, ingest_mb, batch = 0.0, 0.0, []
        for day in range(a.runs):
            path = os.path.join(work, "v%04d.json" % day)
            with open(path, "w") as f:
                json.dump(validate_doc(day, a.runs, a.nodes, a.rails, rng), f)
            batch.append(path)
            if len(batch) == 30 or day == a.runs - 1:
                s, mb, _ = timed([rb, "db", "ingest", "--db", db] + batch)
                ingest_s, ingest_mb = ingest_s + s, max(ingest_mb, mb)
                for p in batch:
                    os.remove(p)
                batch = []
        size = sum(os.path.getsize(db + x) for x in ("", "-wal") if os.path.exists(db + x)) / 1e6
        print("# db-scale: %d nightly validate runs of %d x %d" % (a.runs, a.nodes, a.rails))
        print("%-28s %8.1f s (%.3f s per run), peak RSS %.0f MB" % ("ingest", ingest_s, ingest_s / a.runs, ingest_mb))
        print("%-28s %8.0f MB (%.2f MB per run)" % ("store", size, size / a.runs))
        for name, args in (("history of a NIC", [rb, "history", "gpu0008:rail3", "--db", db, "--last", "365"]),
                           ("history of a pair link", [rb, "history", "gpu0001:rail0-gpu0002:rail0", "--db", db]),
                           ("db trends", [rb, "db", "trends", "--db", db, "--since", "all"])):
            s, mb, out = timed(args)
            print("%-28s %8.2f s, peak RSS %.0f MB" % (name, s, mb))
            if name == "db trends":
                print("".join("    " + line + "\n" for line in out.splitlines() if line.startswith(("drifting", "#"))))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

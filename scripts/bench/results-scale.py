#!/usr/bin/env python3
"""A large SU's validate results file, written and read: the file validate's own writer
makes for N nodes x R rails with every rail pair test (build/tests/railbench_results_scale:
validate's PairResult, link_stats, rail_matrices and lib/results' ResultsFile, figures
seeded noise), its size, the write's seconds and peak RSS, then the seconds and peak RSS
(`/usr/bin/time`'s %e and %M) of each reader: report, compare (the file against itself),
export, export --pairs and db ingest (into a new store: then its size and the time of a
history and a trends query).

  scripts/bench/results-scale.py BUILD_DIR [--sizes 256x8,1024x8] [--counters] [--keep DIR]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def timed(args):
    """(seconds, peak RSS MB, exit status) of one command under /usr/bin/time."""
    p = subprocess.run(["/usr/bin/time", "-f", "@@ %e %M"] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    m = re.search(r"@@ (\S+) (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        sys.exit("%s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr.strip()[-500:]))
    return float(m.group(1)), int(m.group(2)) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--sizes", default="256x8,1024x8")
    ap.add_argument("--counters", action="store_true", help="each pair test with its NICs' counters")
    ap.add_argument("--keep", help="write the files here instead of a temporary directory")
    a = ap.parse_args()
    rb = os.path.join(a.build, "railbench")
    scale = os.path.join(a.build, "tests", "railbench_results_scale")
    work = a.keep or tempfile.mkdtemp(prefix="railbench-results-scale-")
    os.makedirs(work, exist_ok=True)
    try:
        for size in a.sizes.split(","):
            n, r = size.split("x")
            su = os.path.join(work, "su%s.json" % size)
            extra = ["--counters"] if a.counters else []
            p = subprocess.run([scale, su, "--nodes", n, "--rails", r] + extra, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(p.stderr)
            print("== %s nodes x %s rails%s" % (n, r, ", with counters" if a.counters else ""))
            print(p.stdout, end="")
            for name, args in (("report", [rb, "report", su, "-o", os.path.join(work, "r.html")]),
                               ("compare", [rb, "compare", su, su]),
                               ("export", [rb, "export", su, "-o", os.path.join(work, "m.prom")]),
                               ("export --pairs", [rb, "export", su, "--pairs", "-o", os.path.join(work, "m.prom")]),
                               ("db ingest", [rb, "db", "ingest", su, "--db", os.path.join(work, "s%s.db" % size)])):
                s, mb = timed(args)
                print("%-34s %8.2f s  peak RSS %8.0f MB" % ("read: " + name, s, mb))
            db = os.path.join(work, "s%s.db" % size)
            print("%-34s %8.0f MB" % ("store after one run", sum(
                os.path.getsize(db + x) for x in ("", "-wal") if os.path.exists(db + x)) / 1e6))
            for name, args in (("history of a NIC", [rb, "history", "gpu0001:rail0", "--db", db]),
                               ("history of a pair link", [rb, "history", "gpu0001:rail0-gpu0002:rail0", "--db", db]),
                               ("db trends", [rb, "db", "trends", "--db", db, "--since", "all"])):
                s, mb = timed(args)
                print("%-34s %8.2f s  peak RSS %8.0f MB" % ("query: " + name, s, mb))
            if not a.keep:
                os.remove(su)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""railbench report at scale: how long `railbench report` takes and how large the page is
for synthetic validate results (tests/report/make_synthetic_su.py), and how long headless
Chromium takes to load the page (when chromium is installed). Timings on a shared host
move from run to run: it prints the median and the range of REPS runs.

  scripts/bench/report-scale.py RAILBENCH [--reps 3] [--sizes 32x8,1024x8] [--keep DIR]

Each size NxR is N nodes x R rails, 32 nodes per leaf (--leaf-layout nodes-per-leaf), the
slow cable planted on rail 5.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
tests = os.path.join(here, "..", "..", "tests", "report")
sys.path.insert(0, tests)
import cdp  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("railbench")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="32x8,1024x8")
    ap.add_argument("--keep", help="write the results and pages here instead of a temporary directory")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="railbench-report-scale-")
    os.makedirs(work, exist_ok=True)
    chromium = cdp.find_chromium()
    print("%-8s %12s %12s %22s %22s %22s" % ("SU", "results", "page", "render (railbench) s", "render (wall) s",
                                            "Chromium load s"))
    try:
        for size in a.sizes.split(","):
            nodes, rails = (int(x) for x in size.split("x"))
            su = os.path.join(work, "su-%s.json" % size)
            subprocess.run([sys.executable, os.path.join(tests, "make_synthetic_su.py"), su, "--nodes", str(nodes),
                            "--rails", str(rails), "--leaf-layout", "nodes-per-leaf"], check=True)
            page = os.path.join(work, "report-%s.html" % size)
            own, wall, load = [], [], []
            for _ in range(a.reps):
                start = time.monotonic()
                p = subprocess.run([a.railbench, "report", su, "-o", page], capture_output=True, text=True, check=True)
                wall.append(time.monotonic() - start)
                own.append(float(re.search(r" in ([0-9.]+) s", p.stdout).group(1)))
                if chromium:
                    with cdp.Browser(chromium) as b:
                        load.append(b.open(page).load_s)

            def fig(v):
                return "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v)) if v else "-"

            print("%-8s %10.1f MB %10.2f MB %22s %22s %22s" % (size, os.path.getsize(su) / 1e6,
                                                              os.path.getsize(page) / 1e6, fig(own), fig(wall),
                                                              fig(load)))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where the test suite's time goes: each test's last duration, summed per label and
per folder, and the slowest tests.

    scripts/dev/ctest-times.py [BUILD_DIR] [--top N]

Reads the JUnit files that scripts/lib/ctest.sh (rb_ctest: scripts/test.sh, sanitize.sh)
leaves in BUILD_DIR/Testing/junit/, one per ctest run, the newest time of each test
winning (a rerun of a subset updates only those tests; or give `ctest --output-junit
FILE` yourself into that folder), and the tests' labels and properties (`ctest
--show-only=json-v1`). A test counts once in each of its labels. "wall" adds up the runs'
own durations (each JUnit file's suite time), which with tests side by side is less than
the sum of the tests' times. Exit 1 when there is no record yet (run ctest first).
"""
import argparse
import collections
import glob
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def costs(build):
    files = sorted(glob.glob(os.path.join(build, "Testing", "junit", "*.xml")))
    if not files:
        sys.exit(f"ctest-times: no JUnit records in {build}/Testing/junit: run scripts/test.sh or rb_ctest first")
    out = {}
    wall = 0.0
    for path in files:  # oldest first: a later run's time wins
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            continue  # a run that was cut off
        suite = root if root.tag == "testsuite" else root.find("testsuite")
        if suite is not None:
            wall += float(suite.get("time", "0") or 0)
        for case in root.iter("testcase"):
            try:
                out[case.get("name")] = float(case.get("time", "0"))
            except ValueError:
                pass
    return out, wall


def tests(build):
    js = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True,
                        capture_output=True, text=True).stdout
    out = {}
    for t in json.loads(js).get("tests", []):
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        out[t["name"]] = props
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    cost, wall = costs(args.build)
    props = tests(args.build)
    by_label = collections.defaultdict(lambda: [0, 0.0])
    by_prefix = collections.defaultdict(lambda: [0, 0.0])
    serial = [0, 0.0]
    total = 0.0
    for name, p in props.items():
        t = cost.get(name)
        if t is None:
            continue
        total += t
        for label in p.get("LABELS", []) or ["(none)"]:
            by_label[label][0] += 1
            by_label[label][1] += t
        prefix = name.split(":", 1)[0]
        by_prefix[prefix][0] += 1
        by_prefix[prefix][1] += t
        if p.get("RUN_SERIAL"):
            serial[0] += 1
            serial[1] += t
    print(f"# {len(cost)} tests timed: {total:.0f} s of test time in {wall:.0f} s of wall time; "
          f"{serial[0]} run alone ({serial[1]:.0f} s)")
    print("\n| label | tests | seconds |\n| --- | ---: | ---: |")
    for label, (n, t) in sorted(by_label.items(), key=lambda kv: -kv[1][1]):
        print(f"| `{label}` | {n} | {t:.0f} |")
    print("\n| name prefix | tests | seconds |\n| --- | ---: | ---: |")
    for prefix, (n, t) in sorted(by_prefix.items(), key=lambda kv: -kv[1][1]):
        print(f"| `{prefix}:` | {n} | {t:.0f} |")
    print(f"\n| slowest {args.top} | seconds |\n| --- | ---: |")
    for name, t in sorted(cost.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"| {name} | {t:.1f} |")


if __name__ == "__main__":
    main()

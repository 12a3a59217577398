#!/usr/bin/env python3
"""railbench export and --prometheus, checked with Prometheus' own promtool:

  1. every recorded results file whose kind has metrics exports in both formats, and
     `promtool check metrics` accepts it with no lint; a kind without metrics (kvcache)
     is refused in one line, exit 2, naming the kinds that have them;
  2. the synthetic 32 x 8 SU (tests/report/make_synthetic_su.py): the planted slow cable
     (gpu017 rail5) has verdict code 2 and its measured bandwidth, the flapping link
     (gpu009 rail2) 1, the rest 0; --pairs adds node -> peer series for every pair;
  3. a real 2-rank sendrecv under mpirun with --prometheus writes a file promtool
     accepts whose figures are the JSON's, in base units;
  4. the shipped Grafana dashboard parses and every metric it queries is one railbench
     exports;
  5. bad input: an unwritable -o, an unknown --format: exit 2 in one line.

  export_case.py RAILBENCH SOURCE_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402

rb, src = sys.argv[1], sys.argv[2]
fixtures = os.path.join(src, "tests/report/fixtures")
work = rbtest.work_dir("export-")
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


def promtool(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    return p.returncode, (p.stdout + p.stderr).strip()


def series(text):
    """{(name, frozenset(labels)): value} of a Prometheus text file."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def value(s, name, **labels):
    want = set((k, str(v)) for k, v in labels.items())
    hits = [v for (n, ls), v in s.items() if n == name and want <= set(ls)]
    return hits[0] if len(hits) == 1 else None


if shutil.which("promtool") is None:
    print("FAIL: promtool not found: scripts/install-deps.sh installs Debian's prometheus package, which has it")
    sys.exit(1)

# 1. Every recorded kind.
exported = {}
for f in sorted(os.listdir(fixtures)):
    path = os.path.join(fixtures, f)
    kind = json.load(open(path))["command"]
    p = run([rb, "export", path])
    if kind in ("kvcache", "congestion", "workload"):
        one_line = len(p.stderr.strip().splitlines()) == 1
        check(p.returncode == 2 and one_line and "validate" in p.stderr and "sendrecv" in p.stderr,
              f"{f}: {kind} has no metrics: exit {p.returncode}, {p.stderr.strip()!r}")
        continue
    rc, lint = promtool(p.stdout)
    check(p.returncode == 0 and rc == 0 and lint == "", f"{f}: exported ({len(p.stdout.splitlines())} lines), "
          f"promtool rc {rc} {lint!r}")
    exported[f] = p.stdout
    om = run([rb, "export", path, "--format", "openmetrics"]).stdout
    check(om.endswith("# EOF\n") and "# UNIT " in om, f"{f}: openmetrics ends with # EOF and has # UNIT")

# 2. The synthetic SU, with its planted faults.
su = os.path.join(work, "su.json")
subprocess.run([sys.executable, os.path.join(src, "tests/report/make_synthetic_su.py"), su], check=True)
p = run([rb, "export", su, "-o", os.path.join(work, "su.prom")])
text = open(os.path.join(work, "su.prom")).read() if p.returncode == 0 else ""
rc, lint = promtool(text)
check(p.returncode == 0 and rc == 0 and lint == "", f"32x8 SU: exported to a file, promtool rc {rc} {lint!r}")
s = series(text)
doc = json.load(open(su))
rail5 = next(r for r in doc["rails"] if r["rail"] == 5)
link = next(l for l in rail5["links"] if l["node"] == "gpu017")
tx = value(s, "railbench_link_tx_bytes_per_second", node="gpu017", rail=5)
check(tx is not None and abs(tx - link["tx_gbs"] * 1e9) < 1, f"gpu017 rail5 tx {tx} B/s = the JSON's {link['tx_gbs']} GB/s")
check(value(s, "railbench_link_verdict_code", node="gpu017", rail=5) == 2, "gpu017 rail5 (slow cable): verdict code 2")
check(value(s, "railbench_link_verdict_code", node="gpu009", rail=2) == 1, "gpu009 rail2 (flapping): verdict code 1")
codes = [v for (n, _), v in s.items() if n == "railbench_link_verdict_code"]
check(len(codes) == 256 and sum(1 for c in codes if c == 0) == 256 - 4,
      f"256 links have a verdict code, 252 of them 0 (got {len(codes)}, {sum(1 for c in codes if c == 0)})")
check(value(s, "railbench_run_verdict", verdict="FAIL") == 1, "the run's verdict FAIL is 1 in its state set")
check(value(s, "railbench_findings", severity="FAIL", kind="bandwidth") == 1, "one FAIL bandwidth finding")
check(len(s) < 3000, f"without --pairs the SU is {len(s)} series (per link, not per pair)")
pairs = series(run([rb, "export", su, "--pairs"]).stdout)
n_pairs = sum(1 for (n, _) in pairs if n == "railbench_pair_bandwidth_bytes_per_second")
measured = sum(1 for r in doc["rails"] for i, row in enumerate(r["bw_gbs"]) for j, v in enumerate(row)
               if i != j and v is not None)
check(n_pairs == measured == 8 * 32 * 31 - 2,
      f"--pairs: {n_pairs} node -> peer bandwidth series, one per measured pair (8 x 32 x 31 less the 2 directions "
      f"of the pair that never finished: {measured})")

# 3. A real run writes its metrics as it goes.
mpirun = ["mpirun", "-np", "2"] + (["--allow-run-as-root"] if os.getuid() == 0 else [])
jpath, ppath = os.path.join(work, "sr.json"), os.path.join(work, "sr.prom")
p = run(mpirun + [rb, "sendrecv", "-t", "ofi:tcp", "--rails", "lo", "-b", "8", "-e", "4K", "-n", "20", "-q",
                  "--json", jpath, "--prometheus", ppath])
text = open(ppath).read() if os.path.exists(ppath) else ""
rc, lint = promtool(text)
check(p.returncode == 0 and rc == 0 and lint == "", f"mpirun sendrecv --prometheus: rc {p.returncode}, promtool rc {rc}")
doc = json.load(open(jpath)) if os.path.exists(jpath) else {"results": []}
s = series(text)
ok = bool(doc["results"])
for e in doc["results"]:
    for pr in e["pairs"]:
        got = value(s, "railbench_pair_latency_p99_seconds", bytes=e["bytes"], rank=pr["a"], peer_rank=pr["b"],
                    rail=pr["rail"])
        ok = ok and got is not None and abs(got - pr["latency_us"]["p99"] * 1e-6) < 1e-12
        got = value(s, "railbench_pair_bandwidth_bytes_per_second", bytes=e["bytes"], rank=pr["b"],
                    peer_rank=pr["a"], rail=pr["rail"])
        ok = ok and got is not None and abs(got - pr["bw_ba_gbps"]["p50"] * 1e9) < 1e-3
check(ok, "every size's latency p99 and b->a bandwidth match the JSON in seconds and bytes/s")
check(value(s, "railbench_run_info", status="complete") == 1, "railbench_run_info says the run completed")

# 4. The Grafana dashboard queries only what railbench exports.
dash = json.load(open(os.path.join(src, "configs/grafana/railbench-fabric.json")))
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
used = set(m for e in exprs for m in re.findall(r"railbench_[a-z0-9_]+", e))
known = set(n for t in list(exported.values()) + [open(os.path.join(work, "su.prom")).read(), text]
            for (n, _) in series(t))
check(used and used <= known, f"the dashboard's {len(exprs)} queries use {sorted(used)}; unknown: {sorted(used - known)}")

# 5. Bad input.
p = run([rb, "export", su, "-o", "/nonexistent-dir/x.prom"])
check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, f"unwritable -o: exit {p.returncode}, {p.stderr.strip()!r}")
p = run([rb, "export", su, "--format", "xml"])
check(p.returncode == 2 and "openmetrics" in p.stderr, f"--format xml: exit {p.returncode}, {p.stderr.strip()!r}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)

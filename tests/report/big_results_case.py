#!/usr/bin/env python3
"""A large SU's validate results file, written and read back by every reader:

  1. railbench_results_scale writes a NODES x 8 file with every rail pair test through
     validate's own writer (streamed: ResultsFile::set_array), a pair in 997 failed;
     Python's json reads it: every record with validate's fields, each figure in its
     rail's matrix, each failed pair null there and named in the rail's errors; the
     synthetic file (make_synthetic_su.py --rail-pairs validate) lays records out alike;
  2. railbench export --pairs: one series per ordered pair and rail that was measured,
     each the matrix's figure in bytes per second;
  3. railbench compare (the file against itself): every link's band is what its pair
     tests and its rail's spread give (the figures computed here from all records);
  4. railbench report: the page is drawn (the large-file loader, past 16 MB);
  5. a file over the 8 GB limit (sparse): report, compare and export refuse it, exit 2,
     in one line naming its size and the limit.

  big_results_case.py RAILBENCH RESULTS_SCALE [NODES]
"""
import json
import math
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402

rb, scale = sys.argv[1], sys.argv[2]
nodes = int(sys.argv[3]) if len(sys.argv) > 3 else 128
rails = 8
work = rbtest.work_dir("bigres-")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(*args):
    t = time.monotonic()
    p = subprocess.run(list(args), capture_output=True, text=True)
    return p, time.monotonic() - t


# ---- 1. written by validate's writer, read by Python's json ----
su = os.path.join(work, "su.json")
p, secs = run(scale, su, "--nodes", str(nodes), "--rails", str(rails), "--fail-every", "997")
print(p.stdout, end="")
check(p.returncode == 0, "railbench_results_scale wrote %s in %.1f s (%s)" % (su, secs, p.stderr.strip()))
doc = json.load(open(su))
pairs = doc["rail_pairs"]
want = nodes * (nodes - 1) // 2 * rails
check(len(pairs) == want, "rail_pairs holds every pair test: %d of %d" % (len(pairs), want))
fields = {"phase", "node_a", "node_b", "rail_a", "rail_b", "ok", "error", "bw_ab", "bw_ba", "bidir", "lat_p50",
          "lat_p99", "lat_p999", "bw_spread", "test_s"}
check(all(set(q) == fields for q in pairs), "every record has validate's fields")
failed = [q for q in pairs if not q["ok"]]
check(len(failed) == want // 997, "%d failed pair tests, one in 997" % len(failed))
mismatch = 0
for q in pairs:
    m = doc["rails"][q["rail_a"]]
    a, b = q["node_a"], q["node_b"]
    if q["ok"]:
        mismatch += m["bw_gbs"][a][b] != q["bw_ab"] or m["bw_gbs"][b][a] != q["bw_ba"] or m["lat_p99_us"][a][b] != \
            q["lat_p99"]
    else:
        mismatch += m["bw_gbs"][a][b] is not None or not any(
            e["a"] == m["nodes"][a] and e["b"] == m["nodes"][b] for e in m["errors"])
check(mismatch == 0, "each record's figures are its rail's matrix cells (%d differ)" % mismatch)
check(doc["status"] == "complete", "the file ends complete")

# make_synthetic_su.py --rail-pairs validate lays each record out as validate's writer does.
syn = os.path.join(work, "syn.json")
subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_synthetic_su.py"), syn,
                "--nodes", "16", "--rail-pairs", "validate"], check=True)


def first_record(path):
    """The first rail_pairs record's text, its values blanked: the layout alone."""
    with open(path) as f:
        text = f.read(1 << 20)
    rec = text[text.index('"rail_pairs": [') + 15:]
    rec = rec[:rec.index("}") + 1]
    return re.sub(r': ("[^"]*"|[-0-9.e+]+|true|false)', ": V", rec)


check(first_record(syn) == first_record(su), "make_synthetic_su.py --rail-pairs validate writes validate's layout")
check(len(json.load(open(syn))["rail_pairs"]) == 16 * 15 // 2 * 8, "... and every pair test")

# ---- 2. export ----
p, secs = run(rb, "export", su, "--pairs")
check(p.returncode == 0, "export --pairs read it in %.1f s (%s)" % (secs, p.stderr.strip()[:200]))
series = re.findall(r'^railbench_pair_bandwidth_bytes_per_second\{node="([^"]+)",peer="([^"]+)",rail="(\d+)"[^}]*\} (\S+)$',
                    p.stdout, re.M)
# A pair test that did not finish has no figure either way, so no series.
check(len(series) == nodes * (nodes - 1) * rails - 2 * len(failed),
      "export: %d pair series (every ordered pair but the failed ones)" % len(series))
index = {n: i for i, n in enumerate(doc["rails"][0]["nodes"])}
bad = 0
for node, peer, r, v in series:
    cell = doc["rails"][int(r)]["bw_gbs"][index[node]][index[peer]]
    bad += cell is None or not math.isclose(float(v), cell * 1e9, rel_tol=1e-9)
check(bad == 0, "export: every pair series is its matrix cell x 1e9 (%d differ)" % bad)

# ---- 3. compare ----
diff = os.path.join(work, "diff.json")
p, secs = run(rb, "compare", su, su, "--json", diff)
check(p.returncode == 0, "compare read both in %.1f s (%s)" % (secs, p.stderr.strip()[:200]))
rows = json.load(open(diff))["rows"] if os.path.exists(diff) else []
check(len(rows) == nodes * rails * 4, "compare: %d figures (4 per link)" % len(rows))


def median(v):
    v = sorted(v)
    n = len(v)
    return 0 if not n else v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


metrics = {"tx": ("tx_gbs", lambda q, a: q["bw_ab" if a else "bw_ba"]),
           "rx": ("rx_gbs", lambda q, a: q["bw_ba" if a else "bw_ab"]),
           "lat p50": ("lat_p50_us", lambda q, a: q["lat_p50"]), "lat p99": ("lat_p99_us", lambda q, a: q["lat_p99"])}
lo_hi = {}
for q in pairs:
    if q["phase"] != "rail" or not q["ok"]:
        continue
    for a, n in ((True, q["node_a"]), (False, q["node_b"])):
        for name, (_, of) in metrics.items():
            v = of(q, a)
            k = (q["rail_a"], n, name)
            lo, hi = lo_hi.get(k, (v, v))
            lo_hi[k] = (min(lo, v), max(hi, v))
bad = 0
for r, rail in enumerate(doc["rails"]):
    for name, (key, _) in metrics.items():
        vals = [l[key] for l in rail["links"] if l["pairs"] - l["failed"] > 0]
        spread = 3 * 1.4826 * median([abs(x - median(vals)) for x in vals])
        for n, link in enumerate(rail["links"]):
            row = [x for x in rows if x["subject"] == "%s rail%d" % (link["node"], r) and x["metric"] == name]
            lo, hi = lo_hi[(r, n, name)]
            ok = len(row) == 1 and math.isclose(row[0]["old_band"][0], min(link[key] - spread, lo), rel_tol=1e-9) \
                and math.isclose(row[0]["old_band"][1], max(link[key] + spread, hi), rel_tol=1e-9)
            bad += not ok
check(bad == 0, "compare: every link's band is its pair tests' and its rail's spread (%d differ)" % bad)

# ---- 4. report ----
page = os.path.join(work, "r.html")
p, secs = run(rb, "report", su, "-o", page)
check(p.returncode == 0 and os.path.getsize(page) > 0, "report drew it in %.1f s (%s)" % (secs, p.stderr.strip()[:200]))

# ---- 5. over the limit ----
huge = os.path.join(work, "huge.json")
with open(huge, "w") as f:
    f.truncate(9 << 30)
for args in (["report", huge, "-o", page], ["compare", huge, su], ["export", huge]):
    p, _ = run(rb, *args)
    line = p.stderr.strip()
    check(p.returncode == 2 and "\n" not in line and "9663676416 bytes (9.0 GB)" in line and "at most 8.0 GB" in line,
          "%s refuses a 9 GB file: %s" % (args[0], line))

sys.exit(1 if failures else 0)

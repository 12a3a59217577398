#!/usr/bin/env python3
"""railbench report in a real browser: each case renders a page with the real binary
from the recorded fixtures, opens it in headless Chromium (Debian's chromium, over the
DevTools protocol: cdp.py), fails on any console error, uncaught exception, failed load
or request beyond the page itself, checks the DOM and saves a screenshot.

  report_case.py CASE RAILBENCH FIXTURES_DIR SCREENSHOT_DIR

Exit 0 pass, 1 fail, 77 skipped (no chromium: scripts/install-deps.sh installs it).
"""
import atexit
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

case, rb, fixtures, shots = sys.argv[1:5]
os.makedirs(shots, exist_ok=True)
work = rbtest.work_dir("railbench-report-")


def fail(msg):
    rbtest.fail("%s: %s" % (case, msg), logs=[])


def check(cond, msg):
    if not cond:
        fail(msg)


def fx(name):
    return os.path.join(fixtures, name + ".json")


def report(runs, baselines=(), extra=(), expect_rc=0):
    """Runs `railbench report`; returns (html path, seconds, stdout+stderr)."""
    out = os.path.join(work, "report.html")
    args = [rb, "report"] + list(runs) + sum((["--baseline", b] for b in baselines), []) + ["-o", out] + list(extra)
    start = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    text = p.stdout + p.stderr
    check(p.returncode == expect_rc, "railbench report exit %d (expected %d): %s" % (p.returncode, expect_rc, text))
    return out, took, text


# DOM facts every page is checked for; the case adds its own.
COMMON_JS = """(() => {
  const cells = id => Array.from(document.querySelectorAll('svg#' + id + ' rect.cell'));
  return JSON.stringify({
    title: document.title,
    sections: document.querySelectorAll('section.run').length,
    charts: document.querySelectorAll('svg.linechart').length,
    heatmaps: Array.from(document.querySelectorAll('svg.hm')).map(s => ({id: s.id,
      cells: s.querySelectorAll('rect.cell').length,
      bad: Array.from(s.querySelectorAll('rect.cell')).map((c, i) => c.classList.contains('bad') ? i : -1).filter(i => i >= 0),
      regressed: s.querySelectorAll('rect.cell.regressed').length,
      titled: Array.from(s.querySelectorAll('rect.cell')).filter(c => c.querySelector('title')).length,
      shown: s.getBoundingClientRect().width > 0})),
    baselineLines: document.querySelectorAll('path.line.baseline').length,
    lines: document.querySelectorAll('path.line').length,
    points: document.querySelectorAll('circle.pt').length,
    banner: (document.querySelector('.banner') || {}).textContent || '',
    status: Array.from(document.querySelectorAll('.status')).map(s => s.textContent),
    findingLinks: Array.from(document.querySelectorAll('a[href^="#"]')).map(a => a.getAttribute('href').slice(1)),
    brokenLinks: Array.from(document.querySelectorAll('a[href^="#"]')).filter(a => !document.getElementById(a.getAttribute('href').slice(1))).length,
    scripts: document.querySelectorAll('script').length,
    external: Array.from(document.querySelectorAll('[src],[href]')).filter(e => !(e.getAttribute('src') || e.getAttribute('href') || '').startsWith('#')).length,
    text: document.body.innerText.length,
    nan: /\\bNaN\\b|\\bnan\\b|undefined/.test(document.body.innerText),
  });
})()"""


_browser = None


def browser():
    """One Chromium for the case, closed when the script ends (pass or fail)."""
    global _browser
    if _browser is None:
        _browser = cdp.Browser(chromium)
        atexit.register(_browser.close)
    return _browser


def open_page(path, shot_name=None, shot_height=None):
    if True:
        page = browser().open(path)
        problems = page.problems()
        check(not problems, "the browser reported: " + "; ".join(problems))
        facts = json.loads(page.evaluate(COMMON_JS))
        check(facts["scripts"] == 0, "the page has a <script>")
        check(facts["external"] == 0, "the page references something outside itself")
        check(not facts["nan"], "the page shows NaN/undefined")
        for h in facts["heatmaps"]:
            check(h["shown"], "heatmap %s is not laid out" % h["id"])
        if shot_name:
            png = os.path.join(shots, shot_name + ".png")
            page.screenshot(png, max_height=shot_height)
            print("screenshot: %s (%d bytes)" % (png, os.path.getsize(png)))
        facts["page"] = page
        facts["load_s"] = page.load_s
        return facts


def maps(facts, prefix):
    return [h for h in facts["heatmaps"] if h["id"].startswith(prefix)]


def check_validate(facts, nodes, rails, bad_rail=None, bad_node=None):
    """Per metric one heatmap of nodes x nodes per rail; the bad link's row and column marked."""
    for metric in ("bw", "p50", "p99"):
        hm = maps(facts, "run1-%s-r" % metric)
        check(len(hm) == rails, "%d %s heatmaps, expected %d" % (len(hm), metric, rails))
        for h in hm:
            check(h["cells"] == nodes * nodes, "%s has %d cells, expected %d" % (h["id"], h["cells"], nodes * nodes))
            check(h["titled"] >= nodes * (nodes - 1), "%s: %d cells with a hover text" % (h["id"], h["titled"]))
            rail = int(h["id"].rsplit("-r", 1)[1])
            want = []
            if rail == bad_rail:
                want = [a * nodes + b for a in range(nodes) for b in range(nodes)
                        if a != b and (a == bad_node or b == bad_node)]
            if bad_rail is None or rail == bad_rail:
                check(sorted(h["bad"]) == want if bad_rail is not None else not h["bad"],
                      "%s marks cells %s, expected %s" % (h["id"], h["bad"], want))


def check_worst_first(facts, node, rail):
    """The worst-links table's first row names the slow cable and shows on the first screen;
    a click on it lands on its cell, marked and on screen."""
    page = facts["page"]
    row = json.loads(page.evaluate(
        "(() => { const r = document.querySelector('table.worst tbody tr');"
        " return JSON.stringify({text: r.innerText, bottom: r.getBoundingClientRect().bottom, h: innerHeight}); })()"))
    check(node in row["text"] and row["text"].split("\t")[1] == str(rail), "the worst link is %s" % row["text"])
    check(row["bottom"] <= row["h"], "the worst link is below the first screen (%d px)" % row["bottom"])
    target = json.loads(page.evaluate(
        "(() => { document.querySelector('table.worst tbody tr a').click();"
        " const t = document.querySelector(':target'), b = t && t.getBoundingClientRect();"
        " return JSON.stringify({hash: location.hash, svg: t ? t.closest('svg').id : '',"
        " cell: !!t && t.classList.contains('cell'), stroke: t ? getComputedStyle(t).stroke : '',"
        " onScreen: !!b && b.top >= 0 && b.bottom <= innerHeight && b.width > 0}); })()"))
    check(target["cell"] and target["onScreen"], "the worst link's cell is not the target on screen: %s" % target)
    return target


chromium = cdp.find_chromium()

if case == "bad-input":
    # No browser needed: the command line's answers to bad files.
    bad = os.path.join(work, "bad.json")
    for content, words in [("{", "not JSON"), ('{"a": 1}', "not a railbench results file"),
                           ('{"schema": "railbench.result", "schema_version": 9, "command": "allreduce"}',
                            "schema_version 9 is not one this railbench reads"),
                           ('{"schema": "railbench.result", "schema_version": 1, "command": "allreduce"}',
                            "no 'railbench_version' field"),
                           ('{"schema": "railbench.result", "schema_version": 1, "railbench_version": "0.1.0", '
                            '"command": "nosuch", "config": {}, "world": {}, "transport": {}, "results": [], '
                            '"status": "complete"}', "unknown command 'nosuch'")]:
        with open(bad, "w") as f:
            f.write(content)
        _, _, text = report([bad], expect_rc=2)
        check(bad in text and words in text, "expected '%s' naming %s, got: %s" % (words, bad, text))
    _, _, text = report([os.path.join(work, "missing.json")], expect_rc=2)
    check("missing.json: cannot read the results file" in text, text)
    _, _, text = report([fx("allreduce")], baselines=[os.path.join(work, "nobase.json")], expect_rc=2)
    check("nobase.json" in text, text)
    p = subprocess.run([rb, "report", fx("allreduce"), "-o", os.path.join(work, "no", "dir", "r.html")],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "does not exist" in p.stderr, "missing -o directory: %d %s" % (p.returncode, p.stderr))
    p = subprocess.run([rb, "report", fx("allreduce")], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "--output" in p.stderr, "no -o: %d %s" % (p.returncode, p.stderr))
    _, _, text = report([fx("allreduce")], baselines=[fx("kvcache-base")], expect_rc=2)
    check("a kvcache run, but no run on the page is one" in text, text)
    # One file per --baseline: the run after it stays a run.
    p = subprocess.run([rb, "report", "--baseline", fx("allreduce-base"), fx("allreduce"), "-o",
                        os.path.join(work, "r.html")], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "--baseline B RUN: %d %s" % (p.returncode, p.stderr))
    _, _, text = report([fx("allreduce")], extra=["--threshold", "150%"], expect_rc=2)
    check("--threshold '150%'" in text, text)
    print("PASS: bad-input")
    sys.exit(0)

if not chromium:
    print("SKIP: no chromium (scripts/install-deps.sh installs Debian's chromium)")
    sys.exit(77)

if case == "browser-catches-broken-pages":
    # The checks must be able to fail: each broken page has to be caught, and a clean
    # one must pass, with the same code the report cases use.
    # Each page and the kind of problem that must be among those reported for it.
    pages = {
        "console-error": ("<p>x</p><script>console.error('deliberate')</script>", "console.error: deliberate"),
        "exception": ("<p>x</p><script>null.f()</script>", "uncaught exception: TypeError"),
        "missing-image": ("<img src='nosuch.png'>", "failed load"),
        "external-css": ("<link rel=stylesheet href='https://cdn.invalid/x.css'><p>x</p>", "request beyond the page"),
        "missing-svg-image": ("<svg><image href='nosuch.svg' width=10 height=10 /></svg>", "failed load"),
    }
    if True:
        b = browser()
        for name, (body, expected) in pages.items():
            path = os.path.join(work, name + ".html")
            with open(path, "w") as f:
                f.write("<!DOCTYPE html><html><head><meta charset=utf-8><title>t</title></head><body>%s</body></html>"
                        % body)
            problems = b.open(path).problems()
            check(any(p.startswith(expected) for p in problems), "%s was not caught as '%s': %s" % (name, expected, problems))
            print("caught %s: %s" % (name, [p for p in problems if p.startswith(expected)][0]))
        clean = os.path.join(work, "clean.html")
        with open(clean, "w") as f:
            f.write("<!DOCTYPE html><html><head><meta charset=utf-8><title>t</title></head><body><p>ok</p></body></html>")
        check(not b.open(clean).problems(), "a clean page reported problems")
    print("PASS: %s" % case)
    sys.exit(0)

if case in ("validate-healthy", "validate-faulty", "validate-faulty-baseline"):
    run = fx("validate-healthy" if case == "validate-healthy" else "validate-faulty")
    base = [fx("validate-healthy-base")] if case.endswith("baseline") else []
    out, took, _ = report([run], base)
    facts = open_page(out, case, 1500 if case == "validate-faulty" else None)
    if case == "validate-healthy":
        check_validate(facts, 4, 2)
        check(facts["banner"].startswith("PASS"), "banner: " + facts["banner"])
    else:
        check_validate(facts, 4, 2, bad_rail=1, bad_node=2)  # node03 rail1 at 25% of its rate
        check(facts["banner"].startswith("FAIL"), "banner: " + facts["banner"])
        check("run1-bw-r1-row-2" in facts["findingLinks"], "no finding links node03 rail1: %s" % facts["findingLinks"])
        check(facts["brokenLinks"] == 0, "%d links lead nowhere" % facts["brokenLinks"])
        # Following the finding's link targets node03's row label in rail 1's bandwidth map.
        target = json.loads(facts["page"].evaluate(
            "document.querySelector('a[href=\"#run1-bw-r1-row-2\"]').click();"
            "JSON.stringify([location.hash, document.querySelector(':target').textContent,"
            " document.querySelector(':target').closest('svg').id])"))
        check(target[0] == "#run1-bw-r1-row-2" and target[1].endswith("node03") and target[2] == "run1-bw-r1",
              "the finding's link leads to %s" % target)
    if case == "validate-faulty-baseline":
        delta = maps(facts, "run1-delta-r")
        check(len(delta) == 2 and all(h["cells"] == 16 for h in delta), "delta heatmaps: %s" % delta)
        check(delta[1]["regressed"] >= 6, "node03 rail1's 6 cells should be regressed: %s" % delta[1])
    print("report: %d bytes, rendered in %.2f s, loaded in %.2f s" % (os.path.getsize(out), took, facts["load_s"]))
elif case == "validate-fabric":
    # validate --fabric-only on the simulated fabric, su1-leaf0-spine2 at 20%: the fabric
    # drawn (4 spines, 4 leaves, 16 links) with that link red and hovered with its evidence.
    out, took, _ = report([fx("validate-fabric")])
    facts = open_page(out, case, 1200)
    fab = json.loads(facts["page"].evaluate(
        "JSON.stringify((() => { const s = document.querySelector('svg[aria-label^=\"the leaf-spine fabric\"]');"
        " if (!s) return null; const lines = Array.from(s.querySelectorAll('line'));"
        " return {lines: lines.length, boxes: s.querySelectorAll('rect').length,"
        " red: lines.filter(l => l.getAttribute('stroke') === '#d62728').map(l => l.querySelector('title').textContent),"
        " width: s.getBoundingClientRect().width,"
        " rows: Array.from(document.querySelectorAll('h3')).filter(h => h.textContent === 'Fabric').length}; })())"))
    check(fab is not None, "no fabric drawing on the page")
    check(fab["lines"] == 16 and fab["boxes"] == 8, "the fabric drawing: %s" % fab)
    check(fab["width"] > 0, "the fabric drawing is not laid out")
    check(len(fab["red"]) == 1 and fab["red"][0].startswith("su1-leaf0-spine2: "), "the red links: %s" % fab["red"])
    check("FAIL:" in fab["red"][0], "the named link's hover lacks its finding: %s" % fab["red"][0])
    check(fab["rows"] == 1, "no Fabric heading")
    check("bad fabric links: su1-leaf0-spine2" in facts["banner"], "the banner: " + facts["banner"])
elif case == "validate-32x8":
    su = os.path.join(work, "su-32x8.json")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "make_synthetic_su.py"), su], check=True)
    out, took, _ = report([su])
    size = os.path.getsize(out)
    facts = open_page(out, case, 2400)
    # gpu017 rail5: 30% of line rate. 32 nodes is under the 64 of the aggregated view.
    check_validate(facts, 32, 8, bad_rail=5, bad_node=16)
    # The page was 3.3 MB before the hovers lost what their map already says.
    check(size < 2.8e6, "a 32x8 report of %d bytes: the per-cell markup grew" % size)
    first = check_worst_first(facts, "gpu017", 5)
    check(first["hash"].startswith("#run1-cell-r5-") and first["svg"] == "run1-bw-r5",
          "the worst link leads to %s" % first)
    print("32x8 SU: results %d bytes; report %d bytes, rendered in %.2f s, loaded in %.2f s"
          % (os.path.getsize(su), size, took, facts["load_s"]))
    base = os.path.join(work, "su-32x8-base.json")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "make_synthetic_su.py"), "--healthy", base],
                   check=True)
    out, took, _ = report([su], [base])
    facts = open_page(out)
    delta = maps(facts, "run1-delta-r")
    check(len(delta) == 8 and delta[5]["regressed"] == 62, "delta: %s" % [(h["id"], h["regressed"]) for h in delta])
    print("32x8 SU with its baseline: report %d bytes, rendered in %.2f s, loaded in %.2f s"
          % (os.path.getsize(out), took, facts["load_s"]))
elif case == "validate-1024x8":
    # A 1,024-node x 8-rail SU, 32 leaves of 32 nodes per rail, gpu0513's rail5 cable slow:
    # leaf x leaf summaries, node strips and the worst leaf pairs in full.
    su = os.path.join(work, "su-1024x8.json")
    start = time.monotonic()
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "make_synthetic_su.py"), su, "--nodes",
                    "1024", "--leaf-layout", "nodes-per-leaf"], check=True)
    made = time.monotonic() - start
    out, took, _ = report([su])
    size = os.path.getsize(out)
    check(size < 10e6, "a 1024x8 report of %d bytes is over 10 MB" % size)
    # Generous: a quadratic page (every cell drawn) took minutes and GBs.
    check(took < 60, "rendering took %.1f s" % took)
    facts = open_page(out, case, 900)
    check(facts["load_s"] < 30, "the page took %.1f s to load" % facts["load_s"])
    check(facts["brokenLinks"] == 0, "%d links lead nowhere" % facts["brokenLinks"])
    summary = maps(facts, "run1-sum-r")
    check(len(summary) == 8 and all(h["cells"] == 32 * 32 for h in summary),
          "summaries: %s" % [(h["id"], h["cells"]) for h in summary])
    check(all(h["titled"] == 32 * 32 for h in summary), "a hover per block: %s" % [h["titled"] for h in summary])
    # One cell per node; outlined: the nodes the FAIL findings blame (gpu0004, gpu0513, gpu1023).
    strip = maps(facts, "run1-nodes")
    check(len(strip) == 1 and strip[0]["cells"] == 1024 and strip[0]["bad"] == [3, 512, 1022],
          "node strip: %s" % [(h["id"], h["cells"], h["bad"]) for h in strip])
    # gpu0513 is node 16 of leaf 17: rail 5's row and column of blocks through leaf 17 are marked.
    bad = summary[5]["bad"]
    want = sorted({i * 32 + 16 for i in range(32)} | {16 * 32 + j for j in range(32)})
    check(sorted(bad) == want, "rail 5's marked blocks %s, expected %s" % (bad, want))
    check(all(not h["bad"] for h in summary if h["id"] not in ("run1-sum-r5", "run1-sum-r1", "run1-sum-r7")),
          "blocks marked on a rail without a FAIL")
    first = check_worst_first(facts, "gpu0513", 5)
    check(first["hash"] == "#run1-cell-r5-0-512" and first["svg"] == "run1-lpm-r5-0-16",
          "the worst link leads to %s" % first)
    check(first["stroke"] == "rgb(228, 0, 27)", "the target cell is not marked: stroke %s" % first["stroke"])
    # One click on the block opens the leaf pair in full.
    block = json.loads(facts["page"].evaluate(
        "document.getElementById('run1-blk-r5-0-16').closest('a').dispatchEvent(new MouseEvent('click', {bubbles: true}));"
        "JSON.stringify([location.hash, !!document.querySelector(':target svg#run1-lpm-r5-0-16')])"))
    check(block == ["#run1-lp-r5-0-16", True], "the block leads to %s" % block)
    print("1024x8 SU: results %d bytes (made in %.1f s); report %d bytes, rendered in %.2f s, loaded in %.2f s"
          % (os.path.getsize(su), made, size, took, facts["load_s"]))
elif case in ("sendrecv", "sendrecv-baseline"):
    base = [fx("sendrecv-base")] if case.endswith("baseline") else []
    out, _, _ = report([fx("sendrecv")], base)
    facts = open_page(out, case)
    doc = json.load(open(fx("sendrecv")))
    pairs = {(p["a"], p["b"], p["rail"]) for r in doc["results"] for p in r["pairs"]}
    check(facts["charts"] == 6, "%d charts, expected latency p50/p99/p99.9 and bw a->b, b->a, both" % facts["charts"])
    # One line per pair in each of the 6 charts (6 pairs of 4 ranks), and the baseline's dashed.
    check(facts["lines"] - facts["baselineLines"] == 6 * len(pairs), "%d lines" % facts["lines"])
    check(facts["baselineLines"] == (6 * len(pairs) if base else 0), "%d baseline lines" % facts["baselineLines"])
    n = doc["world"]["size"]
    hm = maps(facts, "run1-rail")
    check(len(hm) == 1 and hm[0]["cells"] == n * n, "pair matrix: %s" % hm)
elif case in ("allreduce", "allreduce-baseline", "allgather", "reducescatter", "alltoall", "alltoall-baseline"):
    name = case.replace("-baseline", "")
    base = [fx(name + "-base")] if case.endswith("baseline") else []
    out, _, _ = report([fx(name)], base)
    facts = open_page(out, case)
    doc = json.load(open(fx(name)))
    sizes = len(doc["results"])
    check(facts["charts"] == 2, "%d charts, expected busbw and iteration time" % facts["charts"])
    # 2 placements x 2 charts, each with a point per size; a baseline doubles them.
    check(facts["points"] == 4 * sizes * (2 if base else 1), "%d points for %d sizes" % (facts["points"], sizes))
    check(facts["baselineLines"] == (4 if base else 0), "%d baseline lines" % facts["baselineLines"])
    page = facts["page"]
    algos = json.loads(page.evaluate(
        "JSON.stringify(Array.from(document.querySelectorAll('section.run table:not(.head) tbody tr')).map(r => r.cells[4].textContent))"))
    check(algos == [r["algo"] for r in doc["results"]], "algorithm per size: %s" % algos)
    if name == "alltoall":
        n = doc["world"]["size"]
        hm = maps(facts, "run1-steps")
        check(len(hm) == 1 and hm[0]["cells"] == n * n and hm[0]["titled"] == n * (n - 1), "step matrix: %s" % hm)
elif case in ("kvcache", "kvcache-baseline"):
    base = [fx("kvcache-base")] if case.endswith("baseline") else []
    out, _, _ = report([fx("kvcache")], base)
    facts = open_page(out, case)
    doc = json.load(open(fx("kvcache")))
    page = facts["page"]
    rows = json.loads(page.evaluate(
        "JSON.stringify(Array.from(document.querySelectorAll('section.run table')).map(t => t.tBodies[0].rows.length))"))
    # header, the per-mode table (one row per token count and mode), the what-if table
    check(rows[1] == len(doc["results"]), "mode table rows %s vs %d results" % (rows, len(doc["results"])))
    check(rows[2] == len(doc["what_if"]["rows"]), "what-if rows %s" % rows)
    modes = {r["mode"] for r in doc["results"]}
    check(facts["lines"] - facts["baselineLines"] == 2 * len(modes), "%d lines for %d modes" % (facts["lines"], len(modes)))
    check(facts["baselineLines"] == (2 * len(modes) if base else 0), "%d baseline lines" % facts["baselineLines"])
elif case == "failed-run":
    out, _, _ = report([fx("allreduce-failed")])
    facts = open_page(out, case)
    check(facts["banner"].startswith("This run failed: interrupted by SIGTERM"), "banner: " + facts["banner"])
    check(facts["status"] == ["failed"], "status %s" % facts["status"])
    check(facts["points"] == 4 * len(json.load(open(fx("allreduce-failed")))["results"]), "points %d" % facts["points"])
elif case == "several-runs":
    runs = [fx(n) for n in ("validate-faulty", "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv",
                            "kvcache")]
    bases = [fx(n) for n in ("validate-healthy-base", "allreduce-base", "alltoall-base", "sendrecv-base",
                             "kvcache-base")]
    out, took, _ = report(runs, bases)
    facts = open_page(out, case)
    check(facts["sections"] == 7, "%d sections" % facts["sections"])
    check(facts["brokenLinks"] == 0, "%d links lead nowhere" % facts["brokenLinks"])
    ids = [h["id"] for h in facts["heatmaps"]]
    check(len(ids) == len(set(ids)), "heatmap ids repeat: %s" % ids)
    print("7 runs with 5 baselines: %d bytes, rendered in %.2f s, loaded in %.2f s"
          % (os.path.getsize(out), took, facts["load_s"]))
elif case == "timeline":
    # A real run with --timeline (2 ranks under mpirun, shared memory): the page draws,
    # for its one rail, the whole run and the busiest second, each with the per-ms line,
    # the 1 s and the 5 min averages; the iterations are ticked; every link is listed.
    here = os.path.dirname(os.path.abspath(__file__))
    tl, res = os.path.join(work, "t.timeline"), os.path.join(work, "r.json")
    cmd = ('source %s/../../scripts/lib/mpirun.sh && rb_mpirun 2 %s allreduce -t ofi:shm -b 1M -e 1M -n 20 -w 2 '
           '--timeline %s --json %s' % (here, rb, tl, res))
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "the run with --timeline failed: " + p.stdout + p.stderr)
    out, _, _ = report([res])
    facts = open_page(out, case)
    page = facts["page"]
    tl_facts = json.loads(page.evaluate("""JSON.stringify({
      heading: !!document.querySelector('h3[id$="-timeline"]'),
      charts: Array.from(document.querySelectorAll('svg.linechart.timeline')).map(s => ({
        width: s.getBoundingClientRect().width,
        lines: Array.from(s.querySelectorAll('polyline.tl')).map(l => l.getAttribute('points').trim().split(' ').length),
        ticks: s.querySelectorAll('line.iter').length})),
      links: document.querySelectorAll('details table tbody tr').length})"""))
    check(tl_facts["heading"], "no timeline section")
    charts = tl_facts["charts"]
    check(len(charts) == 2, "%d timeline charts, expected the whole run and the busiest second" % len(charts))
    for c in charts:
        check(c["width"] > 0, "a timeline chart is not laid out")
        check(len(c["lines"]) == 3 and all(n >= 2 for n in c["lines"]), "lines and their points: %s" % c["lines"])
    check(charts[1]["ticks"] >= 1, "no iteration ticked in the busiest second")
    check(tl_facts["links"] == 2, "%d links in the table, expected 2 ranks x 1 rail" % tl_facts["links"])
else:
    fail("unknown case")
print("PASS: %s" % case)

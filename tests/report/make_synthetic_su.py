#!/usr/bin/env python3
"""A synthetic validate results file of a rail-optimized SU, in the shape `railbench
validate --json` writes, to measure and test the report at full size. Seeded, so every
run writes the same file.

The default is the shipped su-h200-32x8-400g layout (gpu001..gpu032, mlx5_0..7, rails
0-1 on leaf1 ... 6-7 on leaf4). Planted faults (none with --healthy): one slow cable
(--bad-node on --bad-rail, default the middle node on rail 5, gpu017 of 32, at 30% of
line rate, a FAIL finding), one flapping link (a node a quarter in, rail 2, a WARN), one
pair test that never finished (the third- and second-last nodes on the last rail) and one
200 Gb/s port (the fourth node, rail 1).

  make_synthetic_su.py OUT.json [--nodes 32] [--rails 8] [--healthy]
                       [--bad-rail 5] [--bad-node INDEX]
                       [--leaf-layout rail|nodes-per-leaf|leaf-per-node|none] [--nodes-per-leaf 32]
                       [--rail-pairs auto|yes|no|validate]

--leaf-layout says what the file tells about leaves: `rail` (what validate writes today:
one "leaf" per rail), `nodes-per-leaf` (each rail's "leaves": [{"leaf", "nodes"}], the
nodes in blocks of --nodes-per-leaf), `leaf-per-node` (each rail's "node_leaves", one leaf
name per node, parallel to "nodes") or `none` (no leaf at all).
--rail-pairs: the per-pair records (`rail_pairs`) repeat the matrices; `auto` writes them
up to 64 nodes only, so a 1,024-node file stays about 200 MB and is written in seconds.
`validate` writes every one at any size as validate's writer does: each record with all
its fields (keys sorted, full-precision figures), indented as in validate's file, made as
they are written (a 1,024 x 8 file's 4 M records would take GBs as Python objects).

A 1,024-node file is generated fast because its figures come from small tables: a pair's
bandwidth is the slower of its two ends (each end's own figure is seeded noise), and its
latencies are read from a seeded table at (a + b), which keeps every matrix symmetric.
"""
import argparse
import json
import random

LINE = 400.0  # Gb/s


def faults(a, n, R):
    """(bad, flappy, broken, slow_port) as (node, rail) / (rail, a, b) tuples, or None."""
    if a.healthy:
        return None, None, None, None
    bad = (a.bad_node if a.bad_node is not None else n // 2, a.bad_rail % R)
    flappy = (n // 4, 2 % R) if n >= 8 else None
    broken = (R - 1, n - 3, n - 2) if n >= 4 else None
    slow_port = (3, 1 % R) if n >= 4 else None
    return bad, flappy, broken, slow_port


def leaf_fields(a, r, nodes):
    """What the rail's entry says about its leaves (see --leaf-layout)."""
    per = max(1, a.nodes_per_leaf)
    blocks = [nodes[i:i + per] for i in range(0, len(nodes), per)]
    names = ["r%d-leaf%02d" % (r, i + 1) for i in range(len(blocks))]
    if a.leaf_layout == "rail":
        return {"leaf": "leaf%d" % (r // 2 + 1)}
    if a.leaf_layout == "nodes-per-leaf":
        return {"leaf": names[0], "leaves": [{"leaf": l, "nodes": b} for l, b in zip(names, blocks)]}
    if a.leaf_layout == "leaf-per-node":
        return {"leaf": names[0], "node_leaves": [names[i // per] for i in range(len(nodes))]}
    return {}


def rail_entry(a, r, nodes, rnd, tables, fl):
    """One rail's matrices, links and errors, as JSON text (written as it is made)."""
    bad, flappy, broken, _ = fl
    n = len(nodes)
    end = []
    for x in range(n):
        f = rnd.gauss(0.94, 0.006)
        if (x, r) == bad:
            f *= 0.30
        end.append(round(LINE / 8 * f, 2))
    ends = ["%.2f" % v for v in end]
    t_bidir, t50, t99, t999, t99x = tables
    fx = flappy[0] if flappy and flappy[1] == r else -1
    bx = (broken[1], broken[2]) if broken and broken[0] == r else (-1, -1)
    bn = bad[0] if bad and bad[1] == r else -1

    def rows(kind):
        for x in range(n):
            if kind == "bw":
                bxv, bxs = end[x], ends[x]
                row = [ends[y] if end[y] < bxv else bxs for y in range(n)]
            else:
                table = {"bidir": t_bidir, "p50": t50, "p99": t99, "p999": t999}[kind]
                if kind == "p99" and x == fx:
                    table = t99x
                row = table[x:x + n]
                if kind == "p99" and fx >= 0 and x != fx:
                    row[fx] = t99x[x + fx]
                if kind == "bidir" and bn >= 0:  # both ways is as slow as the slow end
                    slow = "%.2f" % (2 * end[bn] - 0.2)
                    row = [slow] * n if x == bn else row[:bn] + [slow] + row[bn + 1:]
            row[x] = "null"
            if x in bx:
                row[bx[1] if x == bx[0] else bx[0]] = "null"
            yield "[" + ",".join(row) + "]"

    med = sorted(end)[n // 2]
    links = []
    for x in range(n):
        tx = min(end[x], med)
        failed = 1 if x in bx else 0
        downs = 4 if x == fx else 0
        links.append({"node": nodes[x], "pairs": n - 1, "failed": failed, "tx_gbs": tx, "rx_gbs": tx,
                      "bidir_gbs": round(2 * tx - 0.2, 2), "lat_p50_us": 3.1, "lat_p99_us": 4.3, "bw_spread": 0.02,
                      "link_downs": downs, "carrier_changes": 2 * downs, "link_downed": -1})
    errors = []
    if bx[0] >= 0:
        errors.append({"a": nodes[bx[0]], "b": nodes[bx[1]],
                       "error": "pair test did not finish within 30 s (%s never answered)" % nodes[bx[1]]})
    head = {"rail": r, "nic": "mlx5_%d" % r, "line_rate_gbps": LINE}
    head.update(leaf_fields(a, r, nodes))
    head["nodes"] = nodes
    parts = [json.dumps(head)[:-1]]
    for key, kind in (("bw_gbs", "bw"), ("bidir_gbs", "bidir"), ("lat_p50_us", "p50"), ("lat_p99_us", "p99"),
                      ("lat_p999_us", "p999")):
        parts.append(', "%s": [%s]' % (key, ",".join(rows(kind))))
    parts.append(', "links": %s, "errors": %s}' % (json.dumps(links), json.dumps(errors)))
    return "".join(parts), end


def pair_records(nodes, R, ends, fl):
    """rail_pairs as validate writes them (only for small SUs: they repeat the matrices)."""
    broken = fl[2]
    out = []
    for r in range(R):
        for x in range(len(nodes)):
            for y in range(x + 1, len(nodes)):
                p = {"phase": "rail", "node_a": x, "node_b": y, "rail_a": r, "rail_b": r, "ok": True, "error": ""}
                if broken and (r, x, y) == broken:
                    p.update(ok=False, error="pair test did not finish within 30 s")
                else:
                    v = min(ends[r][x], ends[r][y])
                    p.update(bw_ab=v, bw_ba=v, bidir=round(2 * v - 0.2, 2))
                out.append(p)
    return out


# One rail pair test as validate's writer lays it out (nlohmann's dump(2), keys sorted, a
# record inside the top-level array): bench/commands/validate/verdict.cc to_json(PairResult).
VALIDATE_PAIR = ('{\n      "bidir": %r,\n      "bw_ab": %r,\n      "bw_ba": %r,\n      "bw_spread": %r,\n'
                 '      "error": %s,\n      "lat_p50": %r,\n      "lat_p99": %r,\n      "lat_p999": %r,\n'
                 '      "node_a": %d,\n      "node_b": %d,\n      "ok": %s,\n      "phase": "rail",\n'
                 '      "rail_a": %d,\n      "rail_b": %d,\n      "test_s": %r\n    }')


def validate_pair_texts(nodes, R, ends, fl, tables):
    """Every rail pair test's record as validate writes it, one text at a time."""
    broken = fl[2]
    _, t50, t99, t999, _ = tables
    for r in range(R):
        e = ends[r]
        for x in range(len(nodes)):
            for y in range(x + 1, len(nodes)):
                if broken and (r, x, y) == broken:
                    yield VALIDATE_PAIR % (0.0, 0.0, 0.0, 0.0, json.dumps("pair test did not finish within 30 s"),
                                           0.0, 0.0, 0.0, x, y, "false", r, r, 0.0)
                    continue
                v = min(e[x], e[y])
                yield VALIDATE_PAIR % (round(2 * v - 0.2, 2), v, v, 0.02, '""', float(t50[x + y]), float(t99[x + y]),
                                       float(t999[x + y]), x, y, "true", r, r, 1.5)


def findings_of(nodes, fl):
    bad, flappy, broken, slow_port = fl
    out = []

    def subject(x, r):
        return "%s rail%d" % (nodes[x], r)

    if bad:
        x, r = bad
        out.append({"severity": "FAIL", "kind": "bandwidth", "subject": subject(x, r),
                    "reason": "sending 14.1 GB/s < 90%% of line rate 50.0 GB/s; confirmed against %s" % nodes[0],
                    "measured": 14.1, "expected": 45.0, "unit": "GB/s", "node": x, "rail": r})
    if broken:
        r, x, y = broken
        out.append({"severity": "FAIL", "kind": "unreachable", "subject": subject(y, r),
                    "reason": "no answer from %s within 30 s while its other partners answered" % nodes[x],
                    "measured": 0, "expected": 45.0, "unit": "GB/s", "node": y, "rail": r})
    if flappy:
        x, r = flappy
        out.append({"severity": "WARN", "kind": "intermittent", "subject": subject(x, r),
                    "reason": "the link went down 4 time(s) during its pair tests; passed a re-test against %s"
                    % nodes[0], "measured": 4, "expected": 0, "unit": "downs", "node": x, "rail": r})
    if slow_port:
        x, r = slow_port
        out.append({"severity": "FAIL", "kind": "inventory", "subject": subject(x, r),
                    "reason": "port mlx5_%d runs at 200 Gb/s, expected 400 Gb/s (a wrong cable, optic or "
                    "autonegotiation)" % r, "measured": 200, "expected": 400, "unit": "Gb/s", "node": x, "rail": r})
    return out


def inventory_of(nodes, R, slow_port):
    out = []
    for x, name in enumerate(nodes):
        for s in range(R):
            speed = 200 if slow_port and (x, s) == slow_port else 400
            out.append({"node": name, "slot": s, "rank": x * R + s,
                        "nic": {"nic": "mlx5_%d" % s, "kind": "rdma", "found": True, "up": True, "state": "ACTIVE",
                                "speed_gbps": speed, "mtu": 4096, "link_layer": "Ethernet", "netdev": "ens%d" % s,
                                "address": "fe80::%x:%x" % (x + 1, s), "present": [], "carrier_changes": 0,
                                "link_downed": 0}})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--rails", type=int, default=8)
    ap.add_argument("--healthy", action="store_true", help="no fault: the baseline of the faulty one")
    ap.add_argument("--bad-rail", type=int, default=5, help="the rail of the slow cable")
    ap.add_argument("--bad-node", type=int, default=None, help="its node (0-based; default the middle one)")
    ap.add_argument("--leaf-layout", choices=["rail", "nodes-per-leaf", "leaf-per-node", "none"], default="rail")
    ap.add_argument("--nodes-per-leaf", type=int, default=32)
    ap.add_argument("--rail-pairs", choices=["auto", "yes", "no", "validate"], default="auto")
    ap.add_argument("--seed", type=int, default=15)
    a = ap.parse_args()
    n, R = a.nodes, a.rails
    if n < 2 or R < 1 or (a.bad_node is not None and not 0 <= a.bad_node < n):
        ap.error("need --nodes >= 2, --rails >= 1 and --bad-node inside the nodes")
    rnd = random.Random(a.seed)
    width = max(3, len(str(n)))
    nodes = ["gpu%0*d" % (width, i + 1) for i in range(n)]
    fl = faults(a, n, R)
    m = 2 * n + 7

    def table(fmt, draw):
        t = [fmt % draw() for _ in range(m)]
        return t + t

    t50 = [round(rnd.gauss(3.1, 0.05), 2) for _ in range(m)]
    t99 = [round(v + abs(rnd.gauss(1.2, 0.3)), 2) for v in t50]
    tables = (table("%.2f", lambda: 93.5 - rnd.random() * 0.5), ["%.2f" % v for v in t50 + t50],
              ["%.2f" % v for v in t99 + t99], ["%.2f" % (v * 1.3) for v in t99 + t99],
              ["%.2f" % (v * 6) for v in t99 + t99])
    rails, ends = [], []
    for r in range(R):
        text, end = rail_entry(a, r, nodes, rnd, tables, fl)
        rails.append(text)
        ends.append(end)
    pairs = a.rail_pairs == "yes" or (a.rail_pairs == "auto" and n <= 64)
    retests = []
    if fl[0]:
        x, r = fl[0]
        retests.append({"phase": "retest", "node_a": x, "node_b": 0, "rail_a": r, "rail_b": r, "ok": True,
                        "error": "", "bw_ab": 14.1, "bw_ba": 14.0, "bidir": 28.0, "lat_p50": 3.1, "lat_p99": 4.2,
                        "lat_p999": 5.0, "bw_spread": 0.01})
    findings = findings_of(nodes, fl)
    doc = {
        "schema": "railbench.result", "schema_version": 1, "railbench_version": "0.1.0",
        "railbench_commit": "synthetic", "started_at": "2026-11-22T02:00:00Z", "finished_at": "2026-11-22T02:04:10Z",
        "updated_at": "2026-11-22T02:04:10Z", "status": "complete", "command": "validate",
        "argv": ["railbench", "validate", "--config", "su-synthetic-%dx%d" % (n, R), "--json", "su.json"],
        "config": {"su": "su-synthetic-%dx%d" % (n, R), "nodes": "gpu[%s-%s]" % (nodes[0][3:], nodes[-1][3:]),
                   "gpus_per_node": R, "transport": "verbs"},
        "world": {"size": n * R, "hosts": n, "bootstrap": "mpi", "launcher": "mpi",
                  "ranks": [{"rank": x * R + s, "host": nodes[x], "local_rank": s} for x in range(n) for s in range(R)]},
        "transport": {"name": "verbs", "provider": "mlx5", "rails": 1},
        "results": [], "inventory": inventory_of(nodes, R, fl[3]),
        "rail_pairs": "@PAIRS@" if a.rail_pairs == "validate" else pair_records(nodes, R, ends, fl) if pairs else [],
        "cross_rail_pairs": [], "retest_pairs": retests,
        "rails": "@RAILS@",
        "collectives": [
            {"collective": "allreduce", "algo": "hier", "bytes": 1 << 30, "ranks": n * R, "time_us": 61234.0,
             "busbw_gbs": 34.8, "need_busbw_gbs": 35.0},
            {"collective": "alltoall", "algo": "pairwise", "bytes": 1 << 30, "ranks": n * R, "time_us": 48200.0,
             "busbw_gbs": 27.1, "need_busbw_gbs": 25.0}],
        "findings": findings, "verdict": "FAIL" if findings else "PASS",
    }
    # The rails are JSON text already (a 1,024-node rail as Python lists would take GBs).
    head, tail = json.dumps(doc).split('"@RAILS@"')
    with open(a.out, "w") as f:
        if a.rail_pairs == "validate":
            before, head = head.split('"@PAIRS@"')
            f.write(before + "[")
            first = True
            for text in validate_pair_texts(nodes, R, ends, fl, tables):
                f.write(("\n    " if first else ",\n    ") + text)
                first = False
            f.write("\n  ]")
        f.write(head + "[")
        for i, text in enumerate(rails):
            f.write(("," if i else "") + text)
        f.write("]" + tail)


if __name__ == "__main__":
    main()

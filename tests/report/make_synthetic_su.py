#!/usr/bin/env python3
"""A synthetic validate results file of a 32-node x 8-rail SU (the shipped
su-h200-32x8-400g layout: gpu001..gpu032, mlx5_0..7, rails 0-1 on leaf1 ... 6-7 on
leaf4), in the shape `railbench validate --json` writes, to measure the report at full
size. Seeded, so every run writes the same file. One cable is slow (gpu017 rail5 at
30% of line rate, a FAIL finding), one link flaps (gpu009 rail2, a WARN), one pair test
never finished (gpu030 <-> gpu031 on rail7) and gpu004's mlx5_1 runs at 200 Gb/s.

  make_synthetic_su.py OUT.json [--nodes 32] [--rails 8] [--healthy]
"""
import argparse
import json
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--rails", type=int, default=8)
    ap.add_argument("--healthy", action="store_true", help="no fault: the baseline of the faulty one")
    ap.add_argument("--seed", type=int, default=15)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    n, R = a.nodes, a.rails
    nodes = ["gpu%03d" % (i + 1) for i in range(n)]
    line = 400.0  # Gb/s
    bad = None if a.healthy else (16, 5)          # gpu017 rail5
    flappy = None if a.healthy else (8, 2)        # gpu009 rail2
    broken = None if a.healthy else (7, 29, 30)   # rail7 gpu030 <-> gpu031
    slow_port = None if a.healthy else (3, 1)     # gpu004 rail1 at 200G

    def bw(node, rail):
        f = rnd.gauss(0.94, 0.006)
        if (node, rail) == bad:
            f = 0.30 * f
        return round(line / 8 * f, 3)

    rails, rail_pairs, findings = [], [], []
    for r in range(R):
        m = lambda: [[None] * n for _ in range(n)]
        bwm, bidir, p50, p99, p999 = m(), m(), m(), m(), m()
        errors = []
        for x in range(n):
            for y in range(x + 1, n):
                pair = {"phase": "rail", "node_a": x, "node_b": y, "rail_a": r, "rail_b": r, "ok": True, "error": "",
                        "bw_spread": round(abs(rnd.gauss(0.02, 0.01)), 3)}
                if broken and (r, x, y) == broken:
                    pair.update(ok=False, error="pair test did not finish within 30 s (gpu031 never answered)",
                                bw_ab=0, bw_ba=0, bidir=0, lat_p50=0, lat_p99=0, lat_p999=0)
                    errors.append({"a": nodes[x], "b": nodes[y], "error": pair["error"]})
                    rail_pairs.append(pair)
                    continue
                ab, ba = min(bw(x, r), bw(y, r)), min(bw(x, r), bw(y, r))
                l50 = round(rnd.gauss(3.1, 0.05), 2)
                l99 = round(l50 + abs(rnd.gauss(1.2, 0.3)), 2)
                if flappy and r == flappy[1] and flappy[0] in (x, y):
                    l99 = round(l99 * 6, 2)
                bwm[x][y], bwm[y][x] = ab, ba
                bidir[x][y] = bidir[y][x] = round(ab + ba - rnd.random() * 0.5, 3)
                p50[x][y] = p50[y][x] = l50
                p99[x][y] = p99[y][x] = l99
                p999[x][y] = p999[y][x] = round(l99 * 1.3, 2)
                pair.update(bw_ab=ab, bw_ba=ba, bidir=bidir[x][y], lat_p50=l50, lat_p99=l99, lat_p999=p999[x][y])
                rail_pairs.append(pair)
        links = []
        for x in range(n):
            tx = sorted(bwm[x][y] for y in range(n) if bwm[x][y] is not None)
            rx = sorted(bwm[y][x] for y in range(n) if bwm[y][x] is not None)
            med = lambda v: v[(len(v) - 1) // 2] if v else 0
            downs = 4 if flappy and (x, r) == flappy else 0
            links.append({"node": nodes[x], "pairs": n - 1, "failed": sum(1 for e in errors if nodes[x] in (e["a"], e["b"])),
                          "tx_gbs": med(tx), "rx_gbs": med(rx), "bidir_gbs": med(sorted(v for v in bidir[x] if v)),
                          "lat_p50_us": med(sorted(v for v in p50[x] if v)), "lat_p99_us": med(sorted(v for v in p99[x] if v)),
                          "bw_spread": 0.02, "link_downs": downs, "carrier_changes": 2 * downs, "link_downed": -1})
        rails.append({"rail": r, "nic": "mlx5_%d" % r, "leaf": "leaf%d" % (r // 2 + 1), "line_rate_gbps": line,
                      "nodes": nodes, "bw_gbs": bwm, "bidir_gbs": bidir, "lat_p50_us": p50, "lat_p99_us": p99,
                      "lat_p999_us": p999, "links": links, "errors": errors})
    retests = []
    if bad:
        x, r = bad
        retests.append({"phase": "retest", "node_a": x, "node_b": 0, "rail_a": r, "rail_b": r, "ok": True, "error": "",
                        "bw_ab": 14.1, "bw_ba": 14.0, "bidir": 28.0, "lat_p50": 3.1, "lat_p99": 4.2, "lat_p999": 5.0,
                        "bw_spread": 0.01})
        findings.append({"severity": "FAIL", "kind": "bandwidth", "subject": "%s rail%d (leaf%d)" % (nodes[x], r, r // 2 + 1),
                         "reason": "sending 14.1 GB/s < 90% of line rate 50.0 GB/s; confirmed against gpu001",
                         "measured": 14.1, "expected": 45.0, "unit": "GB/s", "node": x, "rail": r})
    if broken:
        r, x, y = broken
        findings.append({"severity": "FAIL", "kind": "unreachable", "subject": "%s rail%d (leaf%d)" % (nodes[y], r, r // 2 + 1),
                         "reason": "no answer from gpu030 within 30 s while its other partners answered",
                         "measured": 0, "expected": 45.0, "unit": "GB/s", "node": y, "rail": r})
    if flappy:
        x, r = flappy
        findings.append({"severity": "WARN", "kind": "intermittent", "subject": "%s rail%d (leaf%d)" % (nodes[x], r, r // 2 + 1),
                         "reason": "the link went down 4 time(s) during its pair tests; passed a re-test against gpu001",
                         "measured": 4, "expected": 0, "unit": "downs", "node": x, "rail": r})
    if slow_port:
        x, r = slow_port
        findings.append({"severity": "FAIL", "kind": "inventory", "subject": "%s rail%d (leaf%d)" % (nodes[x], r, r // 2 + 1),
                         "reason": "port mlx5_1 runs at 200 Gb/s, expected 400 Gb/s (a wrong cable, optic or autonegotiation)",
                         "measured": 200, "expected": 400, "unit": "Gb/s", "node": x, "rail": r})
    inventory = []
    for x in range(n):
        for s in range(R):
            speed = 200 if slow_port and (x, s) == slow_port else 400
            inventory.append({"node": nodes[x], "slot": s, "rank": x * R + s,
                              "nic": {"nic": "mlx5_%d" % s, "kind": "rdma", "found": True, "up": True, "state": "ACTIVE",
                                      "speed_gbps": speed, "mtu": 4096, "link_layer": "Ethernet", "netdev": "ens%d" % s,
                                      "address": "fe80::%x:%x" % (x + 1, s), "present": [], "carrier_changes": 0,
                                      "link_downed": 0}})
    ranks = [{"rank": x * R + s, "host": nodes[x], "local_rank": s} for x in range(n) for s in range(R)]
    doc = {
        "schema": "railbench.result", "schema_version": 1, "railbench_version": "0.1.0",
        "railbench_commit": "synthetic", "started_at": "2026-11-22T02:00:00Z", "finished_at": "2026-11-22T02:04:10Z",
        "updated_at": "2026-11-22T02:04:10Z", "status": "complete", "command": "validate",
        "argv": ["railbench", "validate", "--config", "su-h200-32x8-400g", "--json", "su.json"],
        "config": {"su": "su-h200-32x8-400g", "nodes": "gpu[001-032]", "gpus_per_node": R, "transport": "verbs"},
        "world": {"size": n * R, "hosts": n, "bootstrap": "mpi", "launcher": "mpi", "ranks": ranks},
        "transport": {"name": "verbs", "provider": "mlx5", "rails": 1},
        "results": [], "inventory": inventory, "rail_pairs": rail_pairs, "cross_rail_pairs": [], "retest_pairs": retests,
        "rails": rails,
        "collectives": [
            {"collective": "allreduce", "algo": "hier", "bytes": 1 << 30, "ranks": n * R, "time_us": 61234.0,
             "busbw_gbs": 34.8, "need_busbw_gbs": 35.0},
            {"collective": "alltoall", "algo": "pairwise", "bytes": 1 << 30, "ranks": n * R, "time_us": 48200.0,
             "busbw_gbs": 27.1, "need_busbw_gbs": 25.0}],
        "findings": findings, "verdict": "FAIL" if findings else "PASS",
    }
    with open(a.out, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()

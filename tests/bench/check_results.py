#!/usr/bin/env python3
"""Validates a railbench results file as the integration tests expect it.

check_results.py FILE --ranks N --command C [--rails R] [--check] [--sizes K] [--algo A]
check_results.py --batch LIST
Fails (exit 1, one line saying why) unless the run completed, every size has results,
#wrong is 0 everywhere, busbw follows the nccl-tests factor, for sendrecv every pair
appears on every rail with latency and bandwidth percentiles that are ordered and
positive, and for alltoall every size holds a step time for every ordered pair (with
--routing, loads that sum to tokens x K per rank and algbw over the busiest rank's bytes).

--batch LIST checks many files in one process: each line of LIST is a case's name, a
tab, and its arguments as above (shell-quoted). It prints "=== ok: NAME" or
"=== FAILED: NAME" for each and fails if any failed. The soft-RoCE cases use it
(tests/bench/mpi_case.sh with RAILBENCH_CHECK_BATCH): inside a TCG guest one Python start
costs about as much as the railbench run it checks.
"""
import argparse
import json
import os
import shlex
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from rbtest import fail  # noqa: E402


def check_summary(where, s, positive=True):
    for k in ("count", "min", "max", "mean", "stdev", "p50", "p90", "p99", "p99_9"):
        if k not in s:
            fail(f"{where}: summary lacks {k}")
    if s["count"] <= 0:
        fail(f"{where}: no samples")
    if positive and s["min"] <= 0:
        fail(f"{where}: non-positive minimum {s['min']}")
    if not (s["min"] <= s["p50"] <= s["p90"] <= s["p99"] <= s["p99_9"] <= s["max"]):
        fail(f"{where}: percentiles out of order {s}")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--rails", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="the run used -c: wrong counts must be 0")
    ap.add_argument("--sizes", type=int, default=0, help="exact number of sizes expected")
    ap.add_argument("--algo", default="", help="every size must have run this algorithm")
    ap.add_argument("--modes", default="",
                    help="kvcache: these modes (and contiguous) at every token count; workload: these group kinds")
    ap.add_argument("--channels", type=int, default=0,
                    help="every rank must have used this many channels (queue pairs) to every peer on every rail")
    ap.add_argument("--stragglers", type=int, default=0,
                    help="a \"stragglers\" section analysing at least this many ops, every message matched, "
                         "none dropped, and a verdict")
    a = ap.parse_args(argv)

    with open(a.file) as f:
        doc = json.load(f)
    for field in ("schema", "schema_version", "railbench_version", "command", "config", "world", "transport",
                  "results", "status"):
        if field not in doc:
            fail(f"missing top-level field {field}")
    if doc["schema"] != "railbench.result" or doc["schema_version"] != 1:
        fail("wrong schema")
    if doc["status"] != "complete":
        fail(f"status is {doc['status']}: {doc.get('error')}")
    if doc["command"] != a.command:
        fail(f"command is {doc['command']}, expected {a.command}")
    if doc["world"]["size"] != a.ranks or len(doc["world"]["ranks"]) != a.ranks:
        fail(f"world size {doc['world']['size']}, expected {a.ranks}")
    if doc["transport"]["rails"] != a.rails:
        fail(f"{doc['transport']['rails']} rails, expected {a.rails}")
    results = doc["results"]
    if not results:
        fail("no results")
    if a.sizes and len(results) != a.sizes:
        fail(f"{len(results)} sizes, expected {a.sizes}")
    if doc["config"]["check"] != a.check:
        fail(f"config.check is {doc['config']['check']}")
    if a.stragglers:
        st = doc.get("stragglers") or {}
        if st.get("ops", 0) < a.stragglers or st.get("unmatched_messages") != 0 or st.get("dropped_ops") != 0:
            fail(f"stragglers: {st.get('ops')} ops (expected >= {a.stragglers}), "
                 f"{st.get('unmatched_messages')} unmatched messages, {st.get('dropped_ops')} dropped ops")
        if st.get("verdict", {}).get("kind") not in ("none", "late_arriver", "slow_link"):
            fail(f"stragglers verdict {st.get('verdict')}")

    if a.command == "kvcache" and "serve" in doc["config"]:
        # kvcache --serve: one entry per run (per probe with --find-max-rate); the times
        # nest: total = queue + transfer, so total's p50 is at least transfer's min.
        for res in results:
            where = f"serve at {res['offered_rps']:.1f} req/s"
            for k in ("request_us", "queue_us", "total_us"):
                check_summary(f"{where} {k}", res[k], positive=k != "queue_us")
            if res["total_us"]["max"] + 1 < res["request_us"]["min"] or res["carried_rps"] <= 0:
                fail(f"{where}: total {res['total_us']} vs transfer {res['request_us']}, carried {res['carried_rps']}")
            if a.check and res["wrong"] != 0:
                fail(f"{where}: #wrong {res['wrong']}")
        if "max_rate" in doc:
            m = doc["max_rate"]
            if len(m["curve"]) != len(results) or m["max_rate"] < 0:
                fail(f"max_rate: {len(m['curve'])} curve points for {len(results)} probes, max {m['max_rate']}")
            if m["max_rate"] > 0 and not any(p["met"] and p["rate"] == m["max_rate"] for p in m["curve"]):
                fail(f"max_rate {m['max_rate']} is not a rate whose probe met the SLO")
    elif a.command == "kvcache":
        modes = a.modes.split(",") if a.modes else []
        seen = set()
        for res in results:
            where = f"{res['tokens']} tokens {res['mode']}"
            seen.add((res["tokens"], res["mode"]))
            check_summary(f"{where} request_us", res["request_us"])
            if a.check and res["wrong"] != 0:
                fail(f"{where}: #wrong {res['wrong']}")
            gbps = res["bytes"] / (res["request_us"]["p50"] * 1e-6) / 1e9
            if abs(gbps - res["gbps"]) > 1e-6 * max(1, gbps):
                fail(f"{where}: gbps {res['gbps']} != bytes / p50 {gbps}")
            if res["mode"] == "per-block" and res["ops"] != res["blocks"]:
                fail(f"{where}: {res['ops']} writes for {res['blocks']} blocks")
            if res["ratio_to_contiguous"] <= 0 or res["aggregate_gbps"] <= 0:
                fail(f"{where}: ratio {res['ratio_to_contiguous']}, aggregate {res['aggregate_gbps']}")
        for tokens in {t for t, _ in seen}:
            for mode in ["contiguous"] + modes:
                if (tokens, mode) not in seen:
                    fail(f"no result for {mode} at {tokens} tokens")
        rows = doc.get("what_if", {}).get("rows", [])
        if len(rows) < 18 or any(r["ms_at_400gbps"] <= 0 for r in rows):
            fail(f"what_if table has {len(rows)} rows (expected >= 6 models x 3 token counts, positive times)")
        # Every transport these tests run on is a host one (shm, tcp, rxe): the table says so.
        w = doc["what_if"]
        if w.get("measured_over") != doc["transport"]["provider"] or w.get("host_transport") is not True:
            fail(f"what_if does not say it was measured over the host transport {doc['transport']['provider']}: "
                 f"measured_over {w.get('measured_over')!r}, host_transport {w.get('host_transport')!r}")
    elif a.command == "workload":
        # One entry per iteration: the slowest rank's step, its exposed communication
        # (never more than the step) and the time per group kind.
        for res in results:
            where = f"iteration {res['iteration']}"
            if not (res["step_us"] > 0 and 0 <= res["exposed_us"] <= res["step_us"] + 1):
                fail(f"{where}: step {res['step_us']} us, exposed {res['exposed_us']} us")
        summary = doc["summary"]
        check_summary("step_us", summary["step_us"])
        if a.check and summary["wrong"] != 0:
            fail(f"#wrong {summary['wrong']}")
        for kind in filter(None, a.modes.split(",")):
            k = summary["kinds"].get(kind)
            if not k or k["bytes_per_step"] <= 0 or k["busbw_gbps"] <= 0:
                fail(f"kind {kind}: {k} (expected bytes and busbw)")
            check_summary(f"{kind} op_us", k["op_us"])
        if summary["ideal_step_us"] <= 0 or len(summary["what_if"]) != 3:
            fail(f"ideal {summary['ideal_step_us']}, what-if {summary['what_if']}")
        # The middle step's timeline on its slowest rank: ops in issue order, inside the
        # step, each on the lane of its group kind or on compute.
        tl = doc["step_timeline"]
        if not (0 <= tl["rank"] < a.ranks and tl["ops"] and len(tl["ops"]) <= tl["ops_in_step"]):
            fail(f"step_timeline: rank {tl['rank']}, {len(tl['ops'])} of {tl['ops_in_step']} ops")
        last = -1
        for op in tl["ops"]:
            if op["index"] <= last or op["start_us"] < 0 or op["us"] < 0 or \
                    op["start_us"] + op["us"] > tl["step_us"] + 1:
                fail(f"step_timeline op {op} outside the step of {tl['step_us']} us or out of order")
            last = op["index"]
        lanes = {op["lane"] for op in tl["ops"]}
        if not lanes <= {"compute", "tp", "pp", "dp", "ep", "edp"}:
            fail(f"step_timeline lanes {lanes}")
    elif a.command == "congestion":
        for res in results:
            where = f"{res['placement']} {res['metric']} under {res['aggressor']}"
            for phase in ("isolated", "congested"):
                if res[phase]["count"] < 1 or res[phase]["p50"] <= 0:
                    fail(f"{where}: {phase} {res[phase]}")
            if res["impact"]["p50"] <= 0:
                fail(f"{where}: impact {res['impact']}")
    elif a.command == "sendrecv":
        # A write latency says how it was measured; the other verbs have no method to name.
        method = doc["config"].get("write_latency")
        if (doc["config"]["verb"] == "write") != (method in ("poll", "imm")):
            fail(f"config.write_latency {method!r} for verb {doc['config']['verb']}")
        expected = {(r, i, j) for r in range(a.rails) for i in range(a.ranks) for j in range(i + 1, a.ranks)}
        for res in results:
            got = {(p["rail"], p["a"], p["b"]) for p in res["pairs"]}
            if got != expected:
                fail(f"size {res['bytes']}: pairs {sorted(got)} != expected {sorted(expected)}")
            for p in res["pairs"]:
                where = f"size {res['bytes']} rail {p['rail']} pair {p['a']}-{p['b']}"
                for k in ("latency_us", "bw_ab_gbps", "bw_ba_gbps", "bw_bidir_gbps"):
                    check_summary(f"{where} {k}", p[k])
                if p["wrong"] != 0:
                    fail(f"{where}: {p['wrong']} wrong bytes")
    else:
        n = a.ranks
        factor = {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n,
                  "reducescatter": (n - 1) / n, "alltoall": (n - 1) / n}.get(a.command, 1.0)
        for res in results:
            if a.algo and res["algo"] != a.algo:
                fail(f"size {res['bytes']}: algo {res['algo']}, expected {a.algo}")
            if a.command == "alltoall":
                expected = {(i, j) for i in range(n) for j in range(n) if i != j}
                got = {(p["src"], p["dst"]) for p in res.get("pairs", [])}
                if got != expected:
                    fail(f"size {res['bytes']}: step times for {sorted(got)} != every ordered pair {sorted(expected)}")
                for p in res["pairs"]:
                    check_summary(f"size {res['bytes']} {p['src']}->{p['dst']} step_us", p["step_us"])
            routing = res.get("routing")
            if routing is not None:
                # --routing: every rank routed tokens x K copies; algbw is over the busiest rank's bytes.
                k = doc["config"]["routing"]["topk"]
                if sum(routing["expert_load"]) != n * routing["tokens_per_rank"] * k:
                    fail(f"size {res['bytes']}: expert loads {routing['expert_load']} do not sum to "
                         f"{n} x {routing['tokens_per_rank']} tokens x {k}")
                if res["bytes"] != routing["tokens_per_rank"] * k * routing["hidden"] * (res["bytes"] // res["count"]):
                    fail(f"size {res['bytes']}: not tokens x K x hidden x type size")
                if routing["expert_imbalance"] < 1 or routing["pair_imbalance"] < 1:
                    fail(f"size {res['bytes']}: imbalance below 1 (max/mean)")
                if routing["busiest_bytes"] < res["bytes"]:
                    fail(f"size {res['bytes']}: busiest rank moved {routing['busiest_bytes']} B, less than it sent")
            bw_bytes = routing["busiest_bytes"] if routing is not None else res["bytes"]
            for side in ("out_of_place", "in_place"):
                s = res[side]
                where = f"size {res['bytes']} {side}"
                check_summary(f"{where} iteration_us", s["iteration_us"])
                if a.check and s["wrong"] != 0:
                    fail(f"{where}: #wrong {s['wrong']}")
                algbw = bw_bytes / (s["time_us"] * 1e-6) / 1e9
                if abs(algbw - s["algbw_gbps"]) > 1e-6 * max(1, algbw):
                    fail(f"{where}: algbw {s['algbw_gbps']} != bytes/time {algbw}")
                if abs(s["busbw_gbps"] - algbw * factor) > 1e-6 * max(1, algbw):
                    fail(f"{where}: busbw {s['busbw_gbps']} != algbw x {factor}")
    if a.channels:
        used = {}
        for c in doc.get("channels", []):
            if c["posted"] > 0:
                used.setdefault((c["rank"], c["peer"], c["rail"]), set()).add(c["channel"])
        for r in range(a.ranks):
            for q in range(a.ranks):
                for rail in range(a.rails):
                    if q == r:
                        continue
                    got = used.get((r, q, rail), set())
                    if got != set(range(a.channels)):
                        fail(f"rank {r} -> peer {q} rail {rail}: traffic on channels {sorted(got)}, "
                             f"expected all of 0..{a.channels - 1}")
    print(f"OK: {a.command}, {a.ranks} ranks, {len(results)} sizes")


def batch(path):
    failed = []
    with open(path) as f:
        lines = [line.rstrip("\n").split("\t", 1) for line in f if line.strip()]
    if not lines:
        fail(f"{path}: no case to check (the cases wrote none)")
    for name, args in lines:
        try:
            main(shlex.split(args))
            print(f"=== ok: {name}", flush=True)
        except SystemExit as e:  # fail() (or argparse) ended that case only
            if e.code not in (0, None):
                print(f"=== FAILED: {name}", flush=True)
                failed.append(name)
    if failed:
        print(f"FAIL: {len(failed)} of {len(lines)} results files: {', '.join(failed)}")
        sys.exit(1)
    print(f"OK: {len(lines)} results files")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--batch":
        batch(sys.argv[2])
    else:
        main()

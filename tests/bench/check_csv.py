#!/usr/bin/env python3
"""check_csv.py RESULTS.json RESULTS.csv: the CSV of a run against its JSON.

Reads the CSV with python's csv module and derives, independently of railbench, the
rows the README documents from the JSON of the same run: the header must match, every
CSV row must equal the row derived from its JSON entry (numbers compared as numbers,
null as an empty cell), and the counts must agree. Also checks the bytes: RFC 4180's
CRLF after every line, no byte-order mark. Exit 1 with one line saying why otherwise.
"""
import csv
import io
import json
import os
import sys

STATS = ("min", "p50", "p90", "p99", "p99_9", "max", "mean", "stdev")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from rbtest import fail  # noqa: E402


def summary(row, name, unit, s):
    for stat in STATS:
        row[f"{name}_{stat}_{unit}"] = None if s is None else s.get(stat)


def hosts_of(doc):
    return {r["rank"]: r.get("host") for r in doc.get("world", {}).get("ranks", [])}


def sendrecv_rows(doc):
    hosts = hosts_of(doc)
    for e in doc["results"]:
        for p in e["pairs"]:
            row = {"bytes": e["bytes"], "op": e["op"], "a": p["a"], "b": p["b"], "host_a": hosts.get(p["a"]),
                   "host_b": hosts.get(p["b"]), "rail": p["rail"], "wrong": p["wrong"]}
            for name, key, unit in (("latency", "latency_us", "us"), ("bw_ab", "bw_ab_gbps", "gbps"),
                                    ("bw_ba", "bw_ba_gbps", "gbps"), ("bw_bidir", "bw_bidir_gbps", "gbps")):
                summary(row, name, unit, p[key])
            yield row


def collective_row(e, place):
    row = {k: e[k] for k in ("bytes", "count", "type", "redop", "root", "algo")}
    side = e[place] if place else None
    row["placement"] = place
    for k in ("time_us", "algbw_gbps", "busbw_gbps", "wrong"):
        row[k] = side[k] if side else None
    summary(row, "iteration", "us", side["iteration_us"] if side else None)
    return row


def collective_rows(doc):
    for e in doc["results"]:
        for place in ("out_of_place", "in_place"):
            yield collective_row(e, place)


def alltoall_rows(doc):
    hosts = hosts_of(doc)

    def link_part(row, link):
        for k in ("src", "dst"):
            row[k] = link[k] if link else None
        row["src_host"] = hosts.get(link["src"]) if link else None
        row["dst_host"] = hosts.get(link["dst"]) if link else None
        summary(row, "step", "us", link["step_us"] if link else None)
        row["link_gbps"] = link["gbps"] if link else None
        return row

    for e in doc["results"]:
        for place in ("out_of_place", "in_place"):
            yield link_part({"row": "collective", **collective_row(e, place)}, None)
        for link in e["pairs"]:
            yield link_part({"row": "link", **collective_row(e, None)}, link)


def kvcache_rows(doc):
    for e in doc["results"]:
        row = {k: e[k] for k in ("tokens", "mode", "bytes", "blocks", "ops")}
        summary(row, "request", "us", e["request_us"])
        for k in ("gbps", "blocks_per_s", "aggregate_gbps", "ratio_to_contiguous", "wrong"):
            row[k] = e[k]
        yield row


def congestion_rows(doc):
    for e in doc["results"]:
        row = {"placement": e["placement"], "victim_a": e["victim_ranks"][0], "victim_b": e["victim_ranks"][1],
               "victim_a_host": e["victim_hosts"][0], "victim_b_host": e["victim_hosts"][1]}
        for k in ("metric", "unit", "aggressor", "aggressor_gbps", "aggressor_capped"):
            row[k] = e[k]
        for phase in ("isolated", "congested"):
            for k in ("count", "p50", "p99", "p99_9"):
                row[f"{phase}_{k}"] = e[phase][k]
        for k in ("p50", "p99", "p99_9"):
            row[f"impact_{k}"] = e["impact"][k]
        yield row


def validate_rows(doc):
    inventory = doc.get("inventory", [])
    nodes = []
    for i in inventory:
        if i["node"] not in nodes:
            nodes.append(i["node"])
    verdicts, kinds = {}, {}
    for f in doc.get("findings", []):
        if "node" not in f or "rail" not in f:
            continue
        key = (f["node"], f["rail"])
        if f["severity"] == "FAIL" or key not in verdicts:
            verdicts[key] = f["severity"]
        kinds.setdefault(key, set()).add(f["kind"])
    rails = {r["rail"]: r for r in doc.get("rails", [])} if isinstance(doc.get("rails"), list) else {}
    for slot in range(max([i["slot"] for i in inventory], default=-1) + 1):
        rail = rails.get(slot)
        for i in (i for i in inventory if i["slot"] == slot):
            link = next((l for l in (rail or {}).get("links", []) if l["node"] == i["node"]), None)
            nic = i["nic"]
            key = (nodes.index(i["node"]), slot)
            row = {"rail": slot, "node": i["node"], "rank": i["rank"], "nic": nic["nic"],
                   "leaf": rail["leaf"] if rail else None, "found": nic["found"], "port_state": nic["state"],
                   "port_speed_gbit_s": nic["speed_gbps"], "mtu": nic["mtu"],
                   "line_rate_gbit_s": rail["line_rate_gbps"] if rail else None}
            for col, k in (("pairs", "pairs"), ("failed_pairs", "failed"), ("tx_gbps", "tx_gbs"),
                           ("rx_gbps", "rx_gbs"), ("bidir_gbps", "bidir_gbs"), ("lat_p50_us", "lat_p50_us"),
                           ("lat_p99_us", "lat_p99_us"), ("bw_spread", "bw_spread"), ("link_downs", "link_downs"),
                           ("carrier_changes", "carrier_changes"), ("link_downed", "link_downed")):
                row[col] = link[k] if link else None
            row["verdict"] = verdicts.get(key, "PASS" if "verdict" in doc else None)
            row["findings"] = ";".join(sorted(kinds.get(key, [])))
            yield row


ROWS = {"sendrecv": sendrecv_rows, "allreduce": collective_rows, "allgather": collective_rows,
        "reducescatter": collective_rows, "alltoall": alltoall_rows, "kvcache": kvcache_rows,
        "congestion": congestion_rows, "validate": validate_rows}


def same(cell, value):
    if value is None:
        return cell == ""
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            return float(cell) == float(value)
        except ValueError:
            return False
    return cell == str(value)


def main():
    if len(sys.argv) != 3:
        fail("usage: check_csv.py RESULTS.json RESULTS.csv")
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    with open(sys.argv[2], "rb") as f:
        raw = f.read()
    if raw.startswith(b"\xef\xbb\xbf"):
        fail("the CSV starts with a byte-order mark")
    if not raw.endswith(b"\r\n") or raw.count(b"\n") != raw.count(b"\r\n"):
        fail("not every line of the CSV ends in CRLF")
    table = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
    header, rows = table[0], table[1:]
    expected = list(ROWS[doc["command"]](doc))
    if not expected:
        fail("the JSON has no results to compare with")
    if header != list(expected[0].keys()):
        fail(f"header {header} is not the documented {list(expected[0].keys())}")
    if len(rows) != len(expected):
        fail(f"{len(rows)} CSV rows, but the JSON has {len(expected)}")
    for n, (row, want) in enumerate(zip(rows, expected), start=2):
        if len(row) != len(header):
            fail(f"line {n}: {len(row)} fields, header has {len(header)}")
        for col, cell in zip(header, row):
            if not same(cell, want[col]):
                fail(f"line {n}, column {col}: CSV has {cell!r}, JSON has {want[col]!r}")
    print(f"PASS: {len(rows)} rows x {len(header)} columns match the JSON ({doc['command']})")


if __name__ == "__main__":
    main()

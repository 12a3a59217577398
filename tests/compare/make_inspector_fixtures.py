#!/usr/bin/env python3
"""Writes NCCL Inspector files of a made-up job whose busbw is a known share of railbench's.

    make_inspector_fixtures.py [OUT_DIR]     (default: tests/compare/fixtures)

The files are in the format NCCL's Inspector profiler plugin (ext-profiler/inspector)
writes with NCCL_INSPECTOR_ENABLE=1: one compact JSON object a line (header, metadata,
coll_perf), one file per process named <host>-pid<pid>.log. Deterministic: the same
results fixtures give the same files, byte for byte.

The job's times come from the real railbench runs kept beside them (allreduce-shm-4.json,
allgather-shm-4.json): at each size the job is given a share of railbench's busbw (at a
size railbench did not measure, of the figure interpolated in log(size), as compare does),
so `railbench compare --job` must find that share again (tests/compare/job_case.sh).

  inspector-job/        4 ranks on railbench's host, one communicator: AllReduce at 64K
                        (95% of the fabric), 256K (50%, the most time lost), 384K (not
                        measured: 80% of the interpolated figure), 1M (90%); AllGather at
                        64K and 1M total (90%, 85%; the Inspector's size is per rank);
                        Broadcast 1M (railbench has no broadcast: not compared).
  inspector-8ranks/     8 ranks: AllReduce and AllGather, which railbench measured at 4
                        ranks only: nothing can be compared.
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CALLS = 21
COMM = "0x5eedc0ffee0001"

# (NCCL name, S bytes as nccl-tests counts it, share of railbench's busbw)
JOB = [
    ("AllReduce", 64 << 10, 0.95),
    ("AllReduce", 256 << 10, 0.50),
    ("AllReduce", 384 << 10, 0.80),
    ("AllReduce", 1 << 20, 0.90),
    ("AllGather", 64 << 10, 0.90),
    ("AllGather", 1 << 20, 0.85),
]
RAILBENCH = {"AllReduce": "allreduce-shm-4.json", "AllGather": "allgather-shm-4.json"}


def factor(coll, n):
    return 2 * (n - 1) / n if coll == "AllReduce" else (n - 1) / n if coll in ("AllGather", "ReduceScatter") else 1


def per_rank_bytes(coll, s, n):
    """The Inspector's coll_msg_size_bytes: count x type size, per rank for AllGather."""
    return s // n if coll in ("AllGather", "ReduceScatter") else s


def railbench_busbw(doc, s):
    """railbench's out-of-place busbw at S, interpolated in log(size) between two sizes."""
    pts = sorted((r["bytes"], r["out_of_place"]["busbw_gbps"]) for r in doc["results"])
    for (b0, v0), (b1, v1) in zip(pts, pts[1:]):
        if b0 == s:
            return v0
        if b0 < s < b1:
            w = (math.log(s) - math.log(b0)) / (math.log(b1) - math.log(b0))
            return v0 + w * (v1 - v0)
    if pts[-1][0] == s:
        return pts[-1][1]
    raise SystemExit(f"{s} bytes lies outside the railbench fixture's sweep")


def record(coll, sn, msg, t_us, rank, n, host, pid, stamp):
    s = msg * n if coll in ("AllGather", "ReduceScatter") else msg
    algbw = s / 1e9 / (t_us / 1e6)
    return {
        "header": {"id": COMM, "rank": rank, "n_ranks": n, "nnodes": 1},
        "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "fixture", "rec_mechanism":
                     "nccl_profiler_interface", "dump_timestamp_us": stamp, "hostname": host, "pid": pid},
        "coll_perf": {"coll": coll, "coll_sn": sn, "coll_msg_size_bytes": msg, "coll_exec_time_us": t_us,
                      "coll_timing_source": "kernel_gpu", "coll_algobw_gbs": round(algbw, 6),
                      "coll_busbw_gbs": round(algbw * factor(coll, n), 6)},
    }


def calls_of(job, n, docs, calls):
    """Every call: (NCCL name, per-rank message bytes, the slowest rank's time in us)."""
    out = []
    for coll, s, share in job:
        fabric = railbench_busbw(docs[coll], s) if coll in docs else None
        # At railbench's busbw one call takes S x factor / busbw; the job takes 1/share of it.
        base = s * factor(coll, n) / (fabric * 1e3) / share if fabric else 250.0
        for k in range(calls):
            jitter = 1 + 0.04 * ((k * 7) % 11 - 5) / 5  # -4%..+4%, symmetric about the median
            out.append((coll, per_rank_bytes(coll, s, n), max(1, round(base * jitter))))
    return out


def write_job(out_dir, n, hosts, job, docs, calls=CALLS):
    os.makedirs(out_dir, exist_ok=True)
    lines = {r: [] for r in range(n)}
    for sn, (coll, msg, t_us) in enumerate(calls_of(job, n, docs, calls), start=1):
        slowest = sn % n
        for r in range(n):
            # The Inspector samples: now and then a rank's record of a call is missing,
            # never the slowest rank's, so each call's time is still the slowest rank's.
            if r != slowest and (sn + r) % 5 == 0:
                continue
            t = t_us if r == slowest else max(1, round(t_us * (0.85 + 0.03 * r)))
            t = min(t, t_us)
            lines[r].append(record(coll, sn, msg, t, r, n, hosts[r], 4000 + r, 1764400000000000 + sn * 1000))
    for r in range(n):
        name = os.path.join(out_dir, f"{hosts[r]}-pid{4000 + r}.log")
        with open(name, "w") as f:
            for rec in lines[r]:
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "fixtures")
    docs = {}
    for coll, name in RAILBENCH.items():
        with open(os.path.join(out, name)) as f:
            docs[coll] = json.load(f)
    ar = docs["AllReduce"]
    n = ar["world"]["size"]
    hosts = [r["host"] for r in sorted(ar["world"]["ranks"], key=lambda r: r["rank"])]
    write_job(os.path.join(out, "inspector-job"), n, hosts, JOB + [("Broadcast", 1 << 20, 1.0)], docs)
    # Twice the ranks on the same hosts: railbench has no figure at that rank count.
    wide = [("AllReduce", 1 << 20, 1.0), ("AllGather", 1 << 20, 1.0)]
    write_job(os.path.join(out, "inspector-8ranks"), 2 * n, hosts + hosts, wide, {}, calls=3)


if __name__ == "__main__":
    main()

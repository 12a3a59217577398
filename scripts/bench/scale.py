#!/usr/bin/env python3
"""railbench's control plane as the world grows, on one host.

For each world size N it starts N real railbench processes that meet through the TCP
rendezvous (rank 0 listens, the star), run the smallest measurement that still goes
through every control-plane step (start-up: rendezvous, host and pid gather, liveness;
the transport's address exchange; one 8-byte ring all-reduce; results gathered to
rank 0; the JSON written; teardown) and exit. It prints per N the wall time from the
first launch to the last exit, rank 0's own wall time and peak RSS, and the median over
REPS runs; then fits wall time against N, N log N and N^2 and names the best fit.

  scripts/bench/scale.py RAILBENCH [--sizes 8,16,32,64] [--reps 3] [--transport ofi:tcp]

On a host with fewer cores than ranks the processes take turns: the figures are the
control plane's cost under that contention, an upper bound for a cluster where each
rank has its own cores, and what matters is how they grow.
"""
import argparse
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one_run(rb, n, transport, work):
    port = free_port()
    args = [rb, "allreduce", "-t", transport, "-b", "8", "-e", "8", "-n", "1", "-w", "0", "-q", "--no-counters",
            "--timeout", "120"]
    if transport == "ofi:tcp":
        args += ["--rails", "lo"]
    procs = []
    t0 = time.monotonic()
    for r in range(n):
        env = dict(os.environ, RAILBENCH_RANK=str(r), RAILBENCH_WORLD_SIZE=str(n),
                   RAILBENCH_ROOT=f"127.0.0.1:{port}", RAILBENCH_JOB_TOKEN=f"scale-{port}")
        extra = ["--json", os.path.join(work, "r.json")] if r == 0 else []
        procs.append(subprocess.Popen(args + extra, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE if r == 0 else subprocess.DEVNULL))
    rank0_wall = rank0_rss = None
    errors = []
    pending = {p.pid: i for i, p in enumerate(procs)}
    while pending:
        pid, status, usage = os.wait4(-1, 0)
        if pid not in pending:
            continue
        i = pending.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            errors.append(f"rank {i} exit {code}")
        if i == 0:
            rank0_wall = time.monotonic() - t0
            rank0_rss = usage.ru_maxrss / 1024  # KiB -> MiB
    wall = time.monotonic() - t0
    err = procs[0].stderr.read().decode(errors="replace").strip() if procs[0].stderr else ""
    if errors:
        raise RuntimeError(f"N={n}: {', '.join(errors[:5])}: {err[-300:]}")
    return wall, rank0_wall, rank0_rss


def fit(points):
    """Least squares of t = a + b f(n) for each growth f; the one with the smallest residual."""
    growths = {"linear": lambda n: n, "n log n": lambda n: n * math.log2(n), "quadratic": lambda n: n * n}
    best = None
    for name, f in growths.items():
        xs = [f(n) for n, _ in points]
        ys = [t for _, t in points]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0
        a = my - b * mx
        res = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys))
        if best is None or res < best[1]:
            best = (name, res, a, b, f)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("railbench")
    ap.add_argument("--sizes", default="8,16,32,64")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--transport", default="ofi:tcp")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="rb-scale-")
    print(f"# railbench control plane: {a.transport}, TCP rendezvous, one 8 B all-reduce; {os.cpu_count()} cores; "
          f"median of {a.reps}")
    print(f"# {'N':>5} {'wall s':>8} {'rank0 s':>8} {'rank0 MiB':>10}")
    points = []
    for n in sizes:
        runs = [one_run(a.railbench, n, a.transport, work) for _ in range(a.reps)]
        wall = statistics.median(r[0] for r in runs)
        r0 = statistics.median(r[1] for r in runs)
        rss = statistics.median(r[2] for r in runs)
        points.append((n, wall))
        print(f"  {n:>5} {wall:>8.2f} {r0:>8.2f} {rss:>10.1f}", flush=True)
    if len(points) >= 3:
        name, _, a0, b, f = fit(points)
        print(f"# best fit: {name}: wall = {a0:.3f} + {b:.3g} x f(N); at N=1024 that is {a0 + b * f(1024):.1f} s "
              f"on this host")


if __name__ == "__main__":
    sys.exit(main())

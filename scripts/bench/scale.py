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

  scripts/bench/scale.py --sim build/tests/railbench_rendezvous_sim [--sizes 256,...,8192]
                         [--block 100] [--results 2048] [--reps 1]

With --sim it measures rank 0's star at 1,024-8,192 ranks without that many processes:
tests/rendezvous/rendezvous_sim.cc runs rank 0's real rendezvous in a process of its own
and the other ranks as threads, each a real TCP bootstrap client on its own socket. Per
N it prints rank 0's wall time per phase (rendezvous, host gather, an all_gather of
--block bytes a rank, an all_gather_v of --results bytes a rank), its peak RSS and CPU time, fits
each phase, and projects 8,192 ranks on a cluster at 10 us and 100 us per message. The
results phase is left out ("-") where the clients would hold more than 2 GiB (N x N x
--results bytes, all in this one process).

  scripts/bench/scale.py --sim build/tests/railbench_rendezvous_sim --gather 1024,16384
                         [--sizes 1024,4096,8192] [--reps 1]

With --gather (bytes a rank, a list) it compares, per N and size, the gather to rank 0
(Bootstrap::gather_v) with the star's all_gather_v of the same blocks: rank 0's time and
the bytes it wrote to its sockets (measured: the kernel's TCP_INFO), the all_gather_v
measured only where the clients' copies fit in 2 GiB, and beside them the bytes rank 0
sends in an all-gather through the star, a ring and a recursive-doubling tree (the
model in gather_main).

  scripts/bench/scale.py --sim build/tests/railbench_rendezvous_sim --topology compare
                         [--sizes 256,1024,4096,8192] [--block 100] [--results 2048]

With --topology compare it runs each N twice, the bootstrap's collectives through rank
0's star and through the binomial tree (RAILBENCH_BOOTSTRAP_TOPOLOGY), and prints per
layout rank 0's time and bytes written for the all_gather of --block bytes, the
all_gather_v of --results bytes, one barrier and an all_reduce_max of 64 values, with
star/tree ratios. All the tree's forwarding runs in the one client process here, so its
times are this host's, not a cluster's; the bytes are the wire's. --topology star or tree
gives the other modes that layout (default auto: the tree from 64 ranks).
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


# The star's wire model for the projection: rank 0 handles each message of a step in
# turn (N-1 in, N-1 out, none overlapped: pessimistic) at t seconds a message, and sends
# every rank the whole N x block result over a 100 Gb/s link.
LINK_BYTES_PER_S = 12.5e9
SIM_RESULTS_CAP = 2 << 30


def sim_run(sim, n, block, results, topology="auto"):
    out = subprocess.run([sim, "--ranks", str(n), "--block", str(block), "--results", str(results),
                          "--topology", topology], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"N={n}: exit {out.returncode}: {out.stderr.strip()[-300:]}")
    fields = out.stdout.split()
    phases = [None if x == "-" else float(x) for x in fields[1:5]]
    return phases, float(fields[5]), float(fields[6])


def project(n, block, results, t_msg):
    """Seconds for rank 0's star at n ranks: (steps, bytes) per phase, as in LINK_BYTES_PER_S's comment."""
    host_bytes = 16  # "sim-node00123" padded, as a real host name is
    # connect: 1 step; all_gather_v (hosts, results): a lengths round of 8 B and the padded blocks.
    steps = [(1, 0), (2, 8 + host_bytes), (1, block), (2, 8 + results)]
    return sum(k * 2 * (n - 1) * t_msg + n * n * b / LINK_BYTES_PER_S for k, b in steps)


def sim_main(a):
    sizes = [int(x) for x in a.sizes.split(",")]
    names = ["connect", "hosts", "block", "results"]
    print(f"# rank 0's TCP rendezvous, simulated clients ({a.sim}); {os.cpu_count()} cores; "
          f"block {a.block} B, results {a.results} B a rank; layout {a.topology}; median of {a.reps}")
    print(f"# {'N':>5} {'connect s':>10} {'hosts s':>8} {'block s':>8} {'results s':>10} {'rank0 MiB':>10} {'rank0 cpu s':>12}")
    series = {k: [] for k in names}
    for n in sizes:
        results = a.results if n * n * a.results <= SIM_RESULTS_CAP else 0
        runs = [sim_run(a.sim, n, a.block, results, a.topology) for _ in range(a.reps)]
        cells = []
        for i, k in enumerate(names):
            vals = [r[0][i] for r in runs if r[0][i] is not None]
            if vals:
                series[k].append((n, statistics.median(vals)))
            cells.append(f"{statistics.median(vals):.3f}" if vals else "-")
        rss = statistics.median(r[1] for r in runs)
        cpu = statistics.median(r[2] for r in runs)
        print(f"  {n:>5} {cells[0]:>10} {cells[1]:>8} {cells[2]:>8} {cells[3]:>10} {rss:>10.1f} {cpu:>12.2f}",
              flush=True)
    for k in names:
        if len(series[k]) >= 3:
            name, _, a0, b, f = fit(series[k])
            print(f"# {k}: best fit {name} (from N={series[k][0][0]}..{series[k][-1][0]}); "
                  f"at N=8192 that is {a0 + b * f(8192):.2f} s on this host")
    for t in (10e-6, 100e-6):
        print(f"# projected star at 8192 ranks, {t * 1e6:.0f} us a message, 100 Gb/s at rank 0: "
              f"{project(8192, a.block, a.results, t):.1f} s")


def star_all_gather_bytes(n, b):
    """What rank 0 writes in the star's all_gather_v of b bytes a rank: a lengths round
    (8 B a rank) and the blocks, each a 24-byte frame header and the whole result to each
    of the n-1 others."""
    return (n - 1) * (24 + 8 * n) + (n - 1) * (24 + n * b)


def gather_main(a):
    """Gather to rank 0 against the star's all-gather, measured and modelled."""
    sizes = [int(x) for x in a.sizes.split(",")]
    per_rank = [int(x) for x in a.gather.split(",")]
    print(f"# gather_v to rank 0 vs the star's all_gather_v, simulated clients ({a.sim}); {os.cpu_count()} cores; "
          f"median of {a.reps}; MB = 1e6 B written by rank 0")
    print("# all-gather model, what rank 0 sends: star (N-1) x N x B; ring and recursive-doubling tree (N-1) x B "
          "(every rank sends the same); a tree's gather to rank 0: 0")
    print(f"# {'N':>5} {'B':>6} {'gather s':>9} {'gather MB':>10} {'allgath s':>10} {'allgath MB':>11} "
          f"{'star MB':>10} {'ring/tree MB':>13} {'star@100G s':>12}")
    for n in sizes:
        for b in per_rank:
            results = b if n * n * b <= SIM_RESULTS_CAP else 0
            runs = []
            for _ in range(a.reps):
                out = subprocess.run([a.sim, "--ranks", str(n), "--block", "8", "--results", str(results),
                                      "--gather", str(b), "--topology", a.topology],
                                     capture_output=True, text=True, timeout=900)
                if out.returncode != 0:
                    raise RuntimeError(f"N={n} B={b}: exit {out.returncode}: {out.stderr.strip()[-300:]}")
                f = out.stdout.split()
                runs.append((float(f[7]), int(f[10]), None if f[4] == "-" else float(f[4]),
                             None if f[9] == "-" else int(f[9])))
            g_s = statistics.median(r[0] for r in runs)
            g_mb = statistics.median(r[1] for r in runs) / 1e6
            ag = [r for r in runs if r[2] is not None]
            ag_s = f"{statistics.median(r[2] for r in ag):.3f}" if ag else "-"
            ag_mb = f"{statistics.median(r[3] for r in ag) / 1e6:.1f}" if ag else "-"
            star = star_all_gather_bytes(n, b)
            print(f"  {n:>5} {b:>6} {g_s:>9.3f} {g_mb:>10.3f} {ag_s:>10} {ag_mb:>11} {star / 1e6:>10.1f} "
                  f"{(n - 1) * b / 1e6:>13.2f} {star / LINK_BYTES_PER_S:>12.2f}", flush=True)


def topology_main(a):
    """The star against the tree, measured on the same clients."""
    sizes = [int(x) for x in a.sizes.split(",")]
    print(f"# the bootstrap's collectives, star vs tree, simulated clients ({a.sim}); {os.cpu_count()} cores; "
          f"block {a.block} B, results {a.results} B a rank; median of {a.reps}; MB = 1e6 B written by rank 0")
    print(f"# {'N':>5} {'layout':>6} {'block s':>8} {'block MB':>9} {'results s':>10} {'results MB':>11} "
          f"{'barrier ms':>11} {'max ms':>8} {'rank0 cpu s':>12}")
    for n in sizes:
        results = a.results if n * n * a.results <= SIM_RESULTS_CAP else 0
        row = {}
        for layout in ("star", "tree"):
            runs = []
            for _ in range(a.reps):
                out = subprocess.run([a.sim, "--ranks", str(n), "--block", str(a.block), "--results", str(results),
                                      "--topology", layout], capture_output=True, text=True, timeout=900)
                if out.returncode != 0:
                    raise RuntimeError(f"N={n} {layout}: exit {out.returncode}: {out.stderr.strip()[-300:]}")
                f = out.stdout.split()
                if f[13] != layout:
                    raise RuntimeError(f"N={n}: asked for the {layout}, the bootstrap took the {f[13]}")
                runs.append([float(f[3]), int(f[8]) / 1e6, None if f[4] == "-" else float(f[4]),
                             None if f[9] == "-" else int(f[9]) / 1e6, float(f[11]) * 1e3,
                             None if f[12] == "-" else float(f[12]) * 1e3,
                             float(f[6])])
            med = [statistics.median(r[i] for r in runs) if runs[0][i] is not None else None for i in range(7)]
            row[layout] = med
            cells = [f"{v:.3f}" if v is not None else "-" for v in med]
            print(f"  {n:>5} {layout:>6} {cells[0]:>8} {cells[1]:>9} {cells[2]:>10} {cells[3]:>11} {cells[4]:>11} "
                  f"{cells[5]:>8} {cells[6]:>12}", flush=True)
        ratio = [f"{s / t:.1f}" if s is not None and t else "-" for s, t in zip(row["star"], row["tree"])]
        print(f"  {n:>5} {'ratio':>6} {ratio[0]:>8} {ratio[1]:>9} {ratio[2]:>10} {ratio[3]:>11} {ratio[4]:>11} "
              f"{ratio[5]:>8} {ratio[6]:>12}   (star / tree)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("railbench", nargs="?")
    ap.add_argument("--sim", help="railbench_rendezvous_sim: simulated clients instead of processes")
    ap.add_argument("--block", type=int, default=100)
    ap.add_argument("--results", type=int, default=2048)
    ap.add_argument("--gather", help="with --sim: bytes a rank (a list), gather to rank 0 vs all_gather_v")
    ap.add_argument("--sizes", default="8,16,32,64")
    ap.add_argument("--topology", default="auto", choices=["auto", "star", "tree", "compare"],
                    help="with --sim: the bootstrap's layout, or compare for star vs tree")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--transport", default="ofi:tcp")
    a = ap.parse_args()
    if a.sim:
        if a.sizes == "8,16,32,64":
            a.sizes = "256,512,1024,2048,4096,8192"
        a.reps = a.reps if a.reps != 3 else 1
        if a.topology == "compare":
            if a.sizes == "256,512,1024,2048,4096,8192":
                a.sizes = "256,1024,4096,8192"
            return topology_main(a)
        if a.gather:
            if a.sizes == "256,512,1024,2048,4096,8192":
                a.sizes = "1024,4096,8192"
            return gather_main(a)
        return sim_main(a)
    if not a.railbench:
        ap.error("give the railbench binary, or --sim with railbench_rendezvous_sim")
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

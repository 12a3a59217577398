#!/usr/bin/env python3
"""A launcher that ends its job one rank after another: rank 0's verdict comes first.

    launcher_order.py RAILBENCH

This script is the launcher: it starts two ranks of an allreduce sweep as its own
children (railbench's TCP rendezvous, RAILBENCH_RANK...), as orted or slurmstepd would.
Mid-sweep it sends SIGTERM to rank 1 first, to one of its threads other than the main
one (the kernel hands a process's signal to any thread), and to rank 0 one second later.
Open MPI's orted sends SIGKILL to every rank of a node as soon as one of them exits, so:
  - rank 1 must take the signal as its launcher's (not as one sent to it alone): no
    error line of its own, rank 0 speaks for the job;
  - rank 1 must not exit before rank 0 (which shares its kernel and pid namespace) has
    exited: had it, the launcher's SIGKILL would have cut rank 0's verdict short;
  - rank 0's results file says "failed", "interrupted by SIGTERM", with the sizes done.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402
from rbtest import fail  # noqa: E402

RB = os.path.abspath(sys.argv[1])
work = rbtest.work_dir("launcher-order-")
results = os.path.join(work, "r.json")


def sizes_done():
    return rbtest.results_count(results)


procs = rbtest.launch_ranks([RB, "allreduce", "-t", "ofi:tcp", "--rails", "lo", "-b", "1K", "-e", "64M", "-n", "40",
                             "--timeout", "20", "--json", results], 2, work)
deadline = time.monotonic() + 60
while sizes_done() < 3:
    if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
        fail("the sweep did not reach 3 sizes")
    time.sleep(0.05)
before = sizes_done()

threads = [int(t) for t in os.listdir(f"/proc/{procs[1].pid}/task") if int(t) != procs[1].pid]
if not threads:
    fail("rank 1 has no thread besides its main one to take the signal")
# kill() of a thread id is a signal to the whole process that this thread is offered first.
os.kill(threads[0], signal.SIGTERM)
t1 = time.monotonic()
while time.monotonic() - t1 < 1.0:
    if procs[1].poll() is not None:
        fail(f"rank 1 exited {time.monotonic() - t1:.2f} s after its launcher's SIGTERM, before rank 0 was "
             "signalled: a launcher's SIGKILL on that exit would cut rank 0's verdict short")
    time.sleep(0.01)
procs[0].send_signal(signal.SIGTERM)
try:
    rc0 = procs[0].wait(timeout=10)
    rc1 = procs[1].wait(timeout=10)
except subprocess.TimeoutExpired:
    fail("a rank still ran 10 s after its SIGTERM")
err1 = open(procs[1].err_path).read()
if "interrupted" in err1:
    fail("rank 1 printed its own line for its launcher's signal (taken as sent to it alone)")
if rc0 != 128 + signal.SIGTERM or rc1 != 128 + signal.SIGTERM:
    fail(f"exit codes {rc0} and {rc1}, want {128 + signal.SIGTERM} for both")
doc = rbtest.read_results(results)
if doc["status"] != "failed" or doc.get("error") != "interrupted by SIGTERM" or len(doc["results"]) < before:
    fail(f"r.json: status {doc['status']!r}, error {doc.get('error')!r}, {len(doc['results'])} sizes "
         f"({before} before the signal)")
print(f"PASS: rank 1 waited for rank 0, said nothing; r.json failed, interrupted by SIGTERM, "
      f"{len(doc['results'])} sizes")

#!/usr/bin/env python3
"""A job ended from outside, many times over, at random moments: every results file says
how it ended.

    signal_storm.py VARIANT RAILBENCH [--tries N] [--budget SECONDS] [--seed S]

Each try starts a 2-rank allreduce sweep (ofi:tcp over lo, 16M to 256M, results in
r.json), waits until a size is in the file, waits a random 0 to 2 s more and ends
the job the way an operator or a batch system does:
  mpirun-TERM   SIGTERM to mpirun (`kill`, a CI timeout)
  mpirun-TERM-sweep  SIGTERM to mpirun at a random moment of a whole 1K-256M sweep
                (5 timed iterations a size): after a random number of sizes (0 to all
                but the last) is in the file, 0 to 1 s more, so every size's start, its
                iterations, its check and the rewrite after it are all reached
  mpirun-INT    SIGINT to mpirun (Ctrl-C)
  ranks-TERM    SIGTERM to every rank at once, mpirun left alone (scancel's way)
  srun-TERM     the same job under srun on the local Slurm (tests/slurm fixture), ended
                by `scancel` (SIGCONT + SIGTERM to every task, SIGKILL KillWait later)
--tries defaults to 15 for mpirun-TERM-sweep and 5 for the others, or 100 with
RAILBENCH_LONG_TESTS=1 (the long mode), and --budget
(seconds for all tries) to 8 s a try for the 16M-256M variants, 10 s for the sweep.
A try passes when the launcher is gone within 30 s and r.json is valid JSON with
"status": "failed", an error naming the signal ("interrupted by SIGTERM" or SIGINT) and at
least the sizes that were there before the signal. Fails on the first try that does not
(printing that try's file, stdout and stderr) or when fewer than --tries ran within
--budget seconds. Exit 77 (ctest: skipped) when the variant's launcher is missing.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN_SH = os.path.join(HERE, "..", "..", "scripts", "lib", "mpirun.sh")
SWEEP = ["allreduce", "-t", "ofi:tcp", "--rails", "lo", "-b", "16M", "-e", "256M", "--timeout", "10"]
# The whole sweep, fewer iterations: 19 sizes, each one's start reachable in a few seconds.
WHOLE_SWEEP = ["allreduce", "-t", "ofi:tcp", "--rails", "lo", "-b", "1K", "-e", "256M", "-n", "5", "-w", "1",
               "--timeout", "10"]
WHOLE_SIZES = 19
END_DEADLINE_S = 30


def results_in(path):
    """(entries, status) of a results file; (0, None) when missing or unreadable."""
    doc = rbtest.read_results(path) or {}
    return len(doc.get("results", [])), doc.get("status")


def reset_signals():
    # A launcher started from a script must not inherit SIGINT ignored, or Ctrl-C is lost.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    except OSError:
        return {}


class Try:
    def __init__(self, variant, rb, work, job):
        self.variant, self.rb, self.work, self.job = variant, rb, work, job
        self.json = os.path.join(work, "r.json")
        self.out = open(os.path.join(work, "out"), "w")
        self.err = open(os.path.join(work, "err"), "w")
        args = [rb] + (WHOLE_SWEEP if variant == "mpirun-TERM-sweep" else SWEEP) + ["--json", self.json]
        if variant == "srun-TERM":
            cmd = ["srun", f"--job-name={job}", "--time=2", "-N", "2", "--ntasks-per-node=1"] + args
        else:
            quoted = " ".join(subprocess.list2cmdline([a]) for a in args)
            cmd = ["bash", "-c", f"source {MPIRUN_SH} && rb_mpirun 2 {quoted}"]
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=self.err, stdin=subprocess.DEVNULL,
                                     cwd=work, start_new_session=True, preexec_fn=reset_signals)

    def mpirun(self):
        """mpirun's pid (the child of the shell that sourced scripts/lib/mpirun.sh)."""
        for p in children(self.proc.pid):
            try:
                if open(f"/proc/{p}/comm").read().strip() == "mpirun":
                    return p
            except OSError:
                pass
        return None

    def ranks(self):
        """The railbench processes of the job under mpirun."""
        return [p for p in children(self.mpirun() or 0) if b"OMPI_COMM_WORLD_RANK" in environ(p)]

    def end(self):
        if self.variant.startswith("mpirun-"):
            os.kill(self.mpirun(), signal.SIGINT if self.variant == "mpirun-INT" else signal.SIGTERM)
        elif self.variant == "ranks-TERM":
            for p in self.ranks():
                os.kill(p, signal.SIGTERM)
        else:
            subprocess.run(["scancel", f"--name={self.job}"], check=False)

    def kill_all(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.variant == "srun-TERM":
            subprocess.run(["scancel", "--signal=KILL", f"--name={self.job}"], check=False)
        self.proc.wait()

    def report(self, why):
        self.out.close()
        self.err.close()
        lines = [f"FAIL: {why}"]
        for name in ("r.json", "out", "err"):
            path = os.path.join(self.work, name)
            text = open(path, errors="replace").read() if os.path.exists(path) else "(missing)"
            if name == "r.json":
                text = re.sub(r'\{"bytes"[^\n]*?\},?\n?', "", text)[:1500]
            lines.append(f"--- {name} (last 15 lines)\n" + "\n".join(text.splitlines()[-15:]))
        return "\n".join(lines)


def one(variant, rb, rng, job):
    """Runs a try; returns "" when it passed, else what went wrong."""
    work = tempfile.mkdtemp(prefix=f"storm-{variant}-")
    t = Try(variant, rb, work, job)
    try:
        deadline = time.monotonic() + 90
        if variant == "mpirun-TERM-sweep":
            # 0: as soon as the file says "running" (the first size starting).
            want, pause = rng.randrange(WHOLE_SIZES), rng.uniform(0, 1)
        else:
            want, pause = 1, rng.uniform(0, 2)
        while results_in(t.json)[0] < want or results_in(t.json)[1] != "running":
            if t.proc.poll() is not None:
                return t.report(f"the job ended by itself (exit {t.proc.returncode}) before it was signalled")
            if time.monotonic() > deadline:
                return t.report(f"not {want} sizes in r.json within 90 s")
            time.sleep(0.01)
        time.sleep(pause)
        before, _ = results_in(t.json)
        if t.variant == "ranks-TERM" and len(t.ranks()) != 2:
            return t.report(f"found {len(t.ranks())} ranks under mpirun, not 2")
        t.end()
        try:
            rc = t.proc.wait(timeout=END_DEADLINE_S)
        except subprocess.TimeoutExpired:
            return t.report(f"the job still ran {END_DEADLINE_S} s after it was signalled")
        try:
            with open(t.json) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            return t.report(f"r.json unreadable after the job ended (launcher exit {rc}): {e}")
        status, error, kept = doc.get("status"), doc.get("error", ""), len(doc.get("results", []))
        if status != "failed" or not re.fullmatch(r"interrupted by SIG(TERM|INT)", error or ""):
            return t.report(f"r.json says status {status!r}, error {error!r} (launcher exit {rc}), "
                            f"want failed and 'interrupted by SIGTERM' or SIGINT")
        if kept < before:
            return t.report(f"r.json kept {kept} sizes; {before} were there before the signal")
        return ""
    finally:
        t.kill_all()
        shutil.rmtree(work, ignore_errors=True)


def a_variant_is_sweep():
    return len(sys.argv) > 1 and sys.argv[1] == "mpirun-TERM-sweep"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variant", choices=["mpirun-TERM", "mpirun-INT", "ranks-TERM", "srun-TERM", "mpirun-TERM-sweep"])
    ap.add_argument("railbench")
    long_mode = os.environ.get("RAILBENCH_LONG_TESTS") == "1"
    # In CI: 15 tries of the whole-sweep SIGTERM, 5 of each 16M-256M variant (the same
    # paths, already covered by the sweep's large sizes); the long mode: 100 of each.
    ci_tries = 15 if a_variant_is_sweep() else 5
    ap.add_argument("--tries", type=int, default=100 if long_mode else ci_tries)
    ap.add_argument("--budget", type=float, default=None, help="seconds for all tries (default: 8 a try, 10 "
                    "for mpirun-TERM-sweep)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep-going", action="store_true", help="count failures instead of stopping at the first")
    a = ap.parse_args()
    if a.budget is None:
        a.budget = a.tries * (10 if a.variant == "mpirun-TERM-sweep" else 8)
    rb = os.path.abspath(a.railbench)
    launcher = "srun" if a.variant == "srun-TERM" else "mpirun"
    if not shutil.which(launcher):
        print(f"SKIP: {launcher} not found")
        return 77
    if launcher == "srun":
        # The local cluster of scripts/slurm-local (the tests/slurm fixture): its env file.
        env = os.path.join(os.environ.get("RAILBENCH_SLURM_DIR", "/tmp/railbench-slurm"), "env")
        if not os.path.exists(env):
            print(f"SKIP: no local Slurm cluster up ({env} missing; scripts/slurm-local/up.sh starts one)")
            return 77
        for line in open(env):
            m = re.match(r"export (\w+)=(.*)", line.strip())
            if m:
                os.environ[m.group(1)] = m.group(2)
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"{a.variant}: {a.tries} tries, seed {seed} (--seed {seed} repeats the delays)", flush=True)
    start, failed = time.monotonic(), 0
    for i in range(a.tries):
        if time.monotonic() - start > a.budget:
            print(f"FAIL: only {i} of {a.tries} tries within {a.budget:.0f} s")
            return 1
        t0 = time.monotonic()
        why = one(a.variant, rb, rng, f"rbstorm-{os.getpid()}-{i}")
        print(f"try {i + 1}: {'ok' if not why else 'FAILED'} ({time.monotonic() - t0:.1f} s)", flush=True)
        if why:
            print(why, flush=True)
            failed += 1
            if not a.keep_going:
                return 1
    if failed:
        print(f"FAIL: {failed} of {a.tries} tries left r.json without a verdict")
        return 1
    print(f"PASS: {a.tries} of {a.tries} say failed, interrupted, sizes kept ({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

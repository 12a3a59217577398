"""The one way a Python case under tests/ starts ranks, waits and fails (the Python side
of tests/support/case.sh). A case imports it from its own folder:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    import rbtest  # noqa: E402

free_port()                  a TCP port free on 127.0.0.1 now
clean_env(**extra)           os.environ without any launcher's variables (Open MPI, PMIx,
                             PMI, Slurm, torchrun, railbench's own), so a rank started from
                             inside mpirun or srun does not take its parent's job for its own
rank_env(rank, size, port)   clean_env plus railbench's TCP bootstrap (lib/runtime/README.md):
                             RAILBENCH_RANK, _WORLD_SIZE, _LOCAL_RANK, _ROOT=127.0.0.1:port,
                             _JOB_TOKEN
work_dir(prefix)             a fresh folder, removed at exit (kept with RAILBENCH_KEEP_WORK=1)
launch_ranks(cmd, n, work)   n ranks of cmd over the TCP bootstrap, rank r's output in
                             work/rank<r>.out and .err; the processes, killed at exit
wait_all(procs, deadline_s)  their exit codes, or fail() naming the ranks still running
wait_until(pred, deadline_s) polls pred until it is true; False at the deadline
read_results(path)           a results file's JSON, or None while it is missing or half
                             written; results_count(path): its number of result entries
fail(msg, logs=...)          "FAIL: msg", the tail of each log, kills what it launched, exit 1
check(cond, what)            "ok: what", or fail(what)
"""

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "SLURM", "RAILBENCH_", "TORCHELASTIC_")
LAUNCHER_NAMES = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "MPI_LOCALRANKID"}
TAIL_LINES = int(os.environ.get("RAILBENCH_FAIL_TAIL", "30"))

_started = []  # the processes launched here: only these are ever killed
_logs = []  # what fail() shows when given none


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES) and k not in LAUNCHER_NAMES}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def rank_env(rank, size, port, token=None, **extra):
    return clean_env(RAILBENCH_RANK=rank, RAILBENCH_WORLD_SIZE=size, RAILBENCH_LOCAL_RANK=rank,
                     RAILBENCH_ROOT=f"127.0.0.1:{port}", RAILBENCH_JOB_TOKEN=token or f"rbtest{port}", **extra)


def work_dir(prefix="rbtest-"):
    path = tempfile.mkdtemp(prefix=prefix)
    if os.environ.get("RAILBENCH_KEEP_WORK") == "1":
        atexit.register(print, f"(kept the work folder {path})")
    else:
        atexit.register(shutil.rmtree, path, True)
    atexit.register(_kill_started)  # runs first (atexit is last in, first out)
    return path


def started(proc):
    """Counts a process this case started: killed at exit (and by fail) if still running."""
    _started.append(proc)
    return proc


def _kill_started():
    for p in _started:
        if p.poll() is None:
            p.kill()
            p.wait()


atexit.register(_kill_started)


def launch_ranks(cmd, n, work, port=None, token=None, env=None, name="rank", cwd=None):
    """n ranks of cmd (a list) over the TCP bootstrap; env: more variables for every rank."""
    port = port or free_port()
    procs = []
    for r in range(n):
        out, err = (os.path.join(work, f"{name}{r}.{s}") for s in ("out", "err"))
        _logs.append(err)
        with open(out, "w") as o, open(err, "w") as e:
            p = subprocess.Popen(cmd, env=rank_env(r, n, port, token, **(env or {})), cwd=cwd or work, stdout=o,
                                 stderr=e, stdin=subprocess.DEVNULL)
        p.out_path, p.err_path = out, err
        procs.append(started(p))
    return procs


def wait_until(pred, deadline_s, interval=0.1):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(interval)
    return bool(pred())


def wait_all(procs, deadline_s, what="the ranks"):
    end = time.monotonic() + deadline_s
    for p in procs:
        try:
            p.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    late = [i for i, p in enumerate(procs) if p.poll() is None]
    if late:
        fail(f"{what}: expected every process to end within {deadline_s} s, got {late} still running")
    return [p.returncode for p in procs]


def read_results(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def results_count(path):
    doc = read_results(path)
    try:
        return len(doc["results"])
    except (TypeError, KeyError):
        return 0


def tail(path, lines=TAIL_LINES):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def fail(msg, logs=None):
    print(f"FAIL: {msg}", flush=True)
    for path in _logs if logs is None else logs:
        text = tail(path)
        if text:
            print(f"--- last lines of {os.path.basename(path)}\n{text}", end="" if text.endswith("\n") else "\n")
    sys.stdout.flush()
    _kill_started()
    sys.exit(1)


def check(cond, what, logs=None):
    if not cond:
        fail(what, logs)
    print(f"ok: {what}")

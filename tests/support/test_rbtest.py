"""rbtest.py's own check: a clean environment, ranks that meet over the TCP bootstrap
env, a deadline that names the rank still running, and fail's expected/got and log tail."""

import os
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rbtest  # noqa: E402

work = rbtest.work_dir("rbtest-self-")

os.environ.update(OMPI_COMM_WORLD_SIZE="4", PMIX_RANK="1", SLURM_PROCID="2", RANK="3", RAILBENCH_ROOT="x:1")
env = rbtest.rank_env(1, 2, 4242)
rbtest.check(not any(k in env for k in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "SLURM_PROCID", "RANK")),
             "rank_env drops the launchers' variables")
rbtest.check((env["RAILBENCH_RANK"], env["RAILBENCH_WORLD_SIZE"], env["RAILBENCH_ROOT"]) == ("1", "2", "127.0.0.1:4242"),
             "rank_env sets the TCP bootstrap's variables")

# Two ranks that print their bootstrap variables: each sees its own rank, the same root.
procs = rbtest.launch_ranks([sys.executable, "-c", "import os; print(os.environ['RAILBENCH_RANK'], "
                             "os.environ['RAILBENCH_ROOT'], 'OMPI_COMM_WORLD_SIZE' in os.environ)"], 2, work)
rbtest.check(rbtest.wait_all(procs, 20) == [0, 0], "both ranks exit 0")
lines = [open(p.out_path).read().split() for p in procs]
rbtest.check(lines[0][0] == "0" and lines[1][0] == "1" and lines[0][1] == lines[1][1] and lines[0][2] == "False",
             f"ranks 0 and 1 share one root and no launcher's variable: {lines}")

rbtest.check(rbtest.wait_until(lambda: True, 1) and not rbtest.wait_until(lambda: False, 0.3), "wait_until")
with open(os.path.join(work, "r.json"), "w") as f:
    f.write('{"results": [1, 2, 3]}')
rbtest.check(rbtest.results_count(os.path.join(work, "r.json")) == 3, "results_count")
rbtest.check(rbtest.read_results(os.path.join(work, "missing.json")) is None, "read_results of a missing file")

# A failing case: a rank past its deadline, then a check that fails with a long log.
child = os.path.join(work, "child.py")
with open(child, "w") as f:
    f.write(textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import rbtest
        work = rbtest.work_dir("rbtest-child-")
        print(work, flush=True)
        mode = sys.argv[1]
        if mode == "deadline":
            procs = rbtest.launch_ranks([sys.executable, "-c", "import time; time.sleep(60)"], 2, work)
            rbtest.wait_all(procs, 1)
        log = f"{{work}}/run.err"
        open(log, "w").write("".join(f"line {{i}}\\n" for i in range(1, 51)))
        rbtest.check(41 == 42, "the answer: expected 42, got 41", logs=[log])
        """))
for mode, want in (("deadline", "FAIL: the ranks: expected every process to end within 1 s, got [0, 1] still running"),
                   ("check", "FAIL: the answer: expected 42, got 41")):
    p = subprocess.run([sys.executable, child, mode], capture_output=True, text=True, timeout=30)
    print(p.stdout, end="")
    got = p.stdout.splitlines()
    rbtest.check(p.returncode == 1, f"{mode}: a failing case exits 1 (got {p.returncode})")
    rbtest.check(want in got, f"{mode}: prints '{want}'")
    rbtest.check(not os.path.exists(got[0]), f"{mode}: its work folder is gone")
    if mode == "check":
        rbtest.check("--- last lines of run.err" in got and got[-1] == "line 50" and "line 21" in got
                     and "line 20" not in got, "check: the log's last 30 lines, no more")
print("PASS")

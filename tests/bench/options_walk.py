#!/usr/bin/env python3
"""Every option that a railbench command's --help lists changes its run or its output.

    options_walk.py RAILBENCH [COMMAND...]

For each command (all that `railbench --help` lists, or those named): one baseline run,
then one run per option with the value from CASES below, compared with the baseline by
the case's proof (a JSON field that differs, a file that appears, a line on stdout, an
exit code...). The walk fails when --help lists an option CASES does not cover (a new
option needs its proof here), when CASES covers an option --help does not list, and when
an option's run shows no difference from the baseline. Runs are real and tiny: ranks are
started here through railbench's own launcher variables (RAILBENCH_RANK, ...; validate's
"nodes" through Slurm's), on libfabric's shm or tcp provider over lo.
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import pty

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402

RB = os.path.abspath(sys.argv[1])
ONLY = sys.argv[2:]
DEADLINE_S = 60
FIXTURES = rbtest.work_dir("walk-fixtures-")
# A request trace kvcache --serve replays (tests/kvcache/make_trace_fixtures.py).
KV_TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kvcache", "fixtures", "burstgpt.csv")
KV_MOONCAKE = os.path.join(os.path.dirname(KV_TRACE), "mooncake.jsonl")


class Run:
    """One launch: rank 0's exit code, stdout and stderr, and the files in its directory."""

    def __init__(self, work, rc, out, err):
        self.work, self.rc, self.out, self.err = work, rc, out, err

    def file(self, name):
        path = os.path.join(self.work, name)
        return path if os.path.exists(path) and os.path.getsize(path) > 0 else None

    def doc(self, name="r.json"):
        path = self.file(name)
        if not path:
            return None
        with open(path) as f:
            return json.load(f)


def read_all(fd, into):
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal closed
            return
        if not chunk:
            return
        into.append(chunk)


def launch(ranks, args, work, nodes=False, tty=False):
    """Starts `ranks` processes of railbench with `args` ({w}: the run's directory, {f}:
    the fixtures); `tty`: rank 0's stderr is a terminal."""
    args = [a.replace("{w}", work).replace("{f}", FIXTURES) for a in args]
    if ranks == 0:  # no job: a command that needs no ranks (info, report, ...)
        p = subprocess.run([RB] + args, capture_output=True, text=True, timeout=DEADLINE_S, cwd=work)
        return Run(work, p.returncode, p.stdout, p.stderr)
    port = rbtest.free_port()
    procs, tty_reader = [], None
    for r in range(ranks):
        env = rbtest.clean_env(RAILBENCH_ROOT=f"127.0.0.1:{port}", RAILBENCH_JOB_TOKEN=f"walk{port}")
        if nodes:  # one "node" per rank, named by a Slurm step (validate maps ranks by node name)
            env.update(SLURM_PROCID=str(r), SLURM_STEP_ID="0", SLURM_STEP_NUM_TASKS=str(ranks), SLURM_LOCALID="0",
                       SLURM_JOB_ID="1", SLURMD_NODENAME=f"walk{r + 1}")
        else:
            env.update(RAILBENCH_RANK=str(r), RAILBENCH_WORLD_SIZE=str(ranks), RAILBENCH_LOCAL_RANK=str(r))
        stderr = subprocess.PIPE
        if tty and r == 0:
            master, slave = pty.openpty()
            stderr, chunks = slave, []
            tty_reader = threading.Thread(target=read_all, args=(master, chunks))
            tty_reader.start()
        procs.append(subprocess.Popen([RB] + args, env=env, cwd=work, stdout=subprocess.PIPE, stderr=stderr, text=True))
        if stderr != subprocess.PIPE:
            os.close(slave)
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=DEADLINE_S))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            outs.append(p.communicate())
    err = outs[0][1]
    if tty_reader:
        tty_reader.join()
        os.close(master)
        err = b"".join(chunks).decode(errors="replace")
    return Run(work, procs[0].returncode, outs[0][0], err)


# ---- proofs: each takes (baseline, run) and returns "" when the option showed, else why not


def field(doc, path):
    at = doc
    for k in path.split("."):
        if isinstance(at, list):
            at = at[int(k)] if k.lstrip("-").isdigit() and len(at) > int(k) else None
        elif isinstance(at, dict):
            at = at.get(k)
        else:
            return None
    return at


def json_proof(name, doc, judge):
    """A proof over the results file NAME of both runs: judge(baseline's, run's) says why
    not, once the run wrote one."""

    def proof(base, run):
        b = run.doc(name)
        if b is None:
            return f"no results file {name} (exit {run.rc}): {run.err.strip()[-300:]}"
        return judge(base.doc(name), b)

    proof.__doc__ = doc
    return proof


def json_differs(path, name="r.json"):
    def judge(a, b):
        fa, fb = field(a, path), field(b, path)
        return "" if fa != fb else f"{path} is {fb!r} in both"

    return json_proof(name, f"JSON {path} differs", judge)


def json_has(path, name="r.json"):
    def judge(a, b):
        if field(b, path) is None:
            return f"{path} missing"
        return "" if a is None or field(a, path) is None else f"{path} in the baseline too"

    return json_proof(name, f"JSON {path} appears", judge)


def json_lacks(path, name="r.json"):
    def judge(a, b):
        if field(a, path) is None:
            return f"{path} missing in the baseline too"
        return "" if field(b, path) is None else f"{path} still there"

    return json_proof(name, f"JSON {path} goes", judge)


def file_appears(name):
    def proof(base, run):
        if not run.file(name):
            return f"{name} not written (exit {run.rc}): {run.err.strip()[-300:]}"
        return "" if not base.file(name) else f"{name} in the baseline too"

    proof.__doc__ = f"file {name} appears"
    return proof


def output_has(stream, pattern):
    """The run's stdout ("out") or stderr ("err") matches `pattern` and the baseline's does not."""
    what = {"out": "stdout", "err": "stderr"}[stream]

    def proof(base, run):
        if not re.search(pattern, getattr(run, stream), re.M):
            return (f"{what} lacks /{pattern}/ (exit {run.rc}): {run.out.strip()[-300:]} "
                    f"{run.err.strip()[-300:]}")
        return "" if not re.search(pattern, getattr(base, stream), re.M) else f"/{pattern}/ in the baseline's {what} too"

    proof.__doc__ = f"{what} /{pattern}/"
    return proof


def stdout_has(pattern):
    return output_has("out", pattern)


def stderr_has(pattern):
    return output_has("err", pattern)


def file_differs(name):
    def proof(base, run):
        if not run.file(name):
            return f"{name} not written (exit {run.rc}): {run.err.strip()[-300:]}"
        with open(run.file(name), "rb") as f, open(base.file(name) or os.devnull, "rb") as g:
            return "" if f.read() != g.read() else f"{name} is the same"

    proof.__doc__ = f"file {name} differs"
    return proof


def stdout_differs(base, run):
    return "" if base.out != run.out else "stdout is the same"


def stderr_quiet(base, run):
    if not base.err.strip():
        return "the baseline's stderr is empty already"
    return "" if not run.err.strip() else f"stderr still says: {run.err.strip()[:200]}"


def exit_is(code, pattern=""):
    def proof(base, run):
        if run.rc != code:
            return f"exit {run.rc}, not {code}: {run.err.strip()[-300:]}"
        if base.rc == code:
            return f"the baseline exits {code} too"
        return "" if re.search(pattern, run.err) else f"stderr lacks /{pattern}/: {run.err.strip()[-300:]}"

    proof.__doc__ = f"exit {code}"
    return proof


def all_of(*proofs):
    def proof(base, run):
        for p in proofs:
            why = p(base, run)
            if why:
                return why
        return ""

    return proof


def case(value, proof, drop=(), ranks=None):
    """An option's run: `value` (a list: the option and its value, plus anything it needs)
    added to the baseline's arguments, less the options in `drop` and their values (an
    option the baseline needs already, given another value). `ranks`: an option that shows
    only with more ranks than the baseline's runs with that many, against a baseline of
    as many."""
    return (value, proof, drop, ranks)


def with_case(base, c):
    """The baseline's arguments less `drop` and less what the case gives again (an option
    given twice is refused), then the case's."""
    value, _, drop, _ = c
    drop = set(drop) | {a for a in value if a.startswith("-")}
    args, i = [], 0
    while i < len(base):
        if base[i] in drop:
            i += 2 if i + 1 < len(base) and not base[i + 1].startswith("-") else 1
        else:
            args.append(base[i])
            i += 1
    return args + value


# ---- the table: per command, its baseline and each option's proof

SHM = ["-t", "ofi:shm"]
TCP = ["-t", "ofi:tcp", "--rails", "lo"]
SWEEP = {
    "--min-bytes": case(["-b", "2K"], json_differs("results.0.bytes")),
    "--max-bytes": case(["-e", "8K"], json_differs("config.max_bytes")),
    "--step-factor": case(["-f", "4"], json_differs("results.1.bytes")),
    "--step-bytes": case(["-i", "512"], json_differs("results.1.bytes")),
}
OUTPUT = {
    "--json": case(["--json", "{w}/other.json"], file_appears("other.json")),
    "--csv": case(["--csv", "{w}/r.csv"], file_appears("r.csv")),
    "--quiet": case(["-q"], stderr_quiet),
    "--no-counters": case(["--no-counters"], json_differs("world.ranks.0.rails.0.counters")),
    "--db": case(["--db", "{w}/s.db"], all_of(file_appears("s.db"), stderr_has(r"run store .*s\.db: run \w+ added"))),
}
TRANSPORT = {
    "--transport": case(TCP, json_differs("transport.provider")),
    "--rails": case(["--rails", "2"], json_differs("transport.rails")),
    # verbs' own options: outside a verbs run they are refused up front, by name (given
    # here by their older spelling, which must keep working as an alias).
    "--verbs-gid-index": case(["--gid-index", "1"], exit_is(2, r"--verbs-gid-index \(--gid-index\)")),
    "--verbs-qps-per-peer": case(["--qps-per-peer", "2"], exit_is(2, r"--verbs-qps-per-peer \(--qps-per-peer\)")),
}
MEMORY = {
    # Without a GPU it is refused, naming the option; with one the buffers move.
    "--mem": case(["--mem", "cuda-host"], exit_is(1, "--mem cuda-host")),
    "--gpu-map": case(["--gpu-map", "x"], exit_is(2, "--gpu-map")),
}
TIMELINE = {"--timeline": case(["--timeline", "{w}/t.bin"], all_of(file_appears("t.bin"), json_has("timeline")))}
# Over shm there are no IP flows to trace: refused by name (tests/rxe/roce_paths.sh traces
# RoCE v2 queue pairs through a fabric in the soft-RoCE VM); a rate out of range likewise.
PATHS = {
    "--paths": case(["--paths", "1"], exit_is(2, "--paths: transport ofi .shm. does not say which IP flows")),
    "--probe-rate": case(["--paths", "1", "--probe-rate", "0"], exit_is(2, "--probe-rate")),
}
TIMEOUT = {"--timeout": case(["--timeout", "7"], json_differs("config.timeout_s"))}
# The commands whose results have metrics (bench/offline/export).
METRICS = {"--prometheus": case(["--prometheus", "{w}/r.prom"], file_appears("r.prom"))}
BURN_IN = {
    "--duration": case(["--duration", "1s"], json_has("burn_in")),
    "--cycles": case(["--cycles", "2"], json_has("burn_in")),
}

STRAGGLERS = {
    "--stragglers": case(["--stragglers"], json_has("stragglers")),
    "--straggler-threshold": case(["--straggler-threshold", "5%,50%"], json_differs("config.stragglers")),
}


def sweep_command(extra):
    cases = {**TRANSPORT, **SWEEP, **OUTPUT, **METRICS, **TIMELINE, **PATHS, **TIMEOUT, **MEMORY, **BURN_IN}
    cases.update({
        "--iters": case(["-n", "3"], json_differs("config.iters")),
        "--warmup-iters": case(["-w", "2"], json_differs("config.warmup_iters")),
        "--check": case(["-c"], stdout_has(r"^# (Out of bounds values|Wrong bytes) : 0 OK")),
    })
    cases.update(extra)
    return cases


COLLECTIVE = {"--datatype": case(["-d", "f64"], json_differs("results.0.type")), **STRAGGLERS}
REDUCE = {"--op": case(["-o", "max"], json_differs("results.0.redop"))}
SLICE = {"--slice-bytes": case(["--slice-bytes", "64K"], json_differs("config.slice_bytes"))}

COMMANDS = {
    "sendrecv": dict(ranks=2, base=SHM + ["-b", "1K", "-e", "4K", "-n", "2", "-w", "1", "--bw-iters", "1",
                                          "--window", "2", "--json", "{w}/r.json"],
                     cases=sweep_command({
                         "--verb": case(["--verb", "read"], json_differs("config.verb")),
                         "--write-latency": case(["--verb", "write", "--write-latency", "imm"],
                                                 json_differs("config.write_latency")),
                         "--window": case(["--window", "4"], json_differs("config.window")),
                         "--bw-iters": case(["--bw-iters", "2"], json_differs("results.0.pairs.0.bw_ab_gbps.count")),
                         # Every pair is printed anyway up to 8 pairs: 5 ranks make 10.
                         "--all-pairs": case(["--all-pairs"], stdout_has(r"^ +1024 +0 +\d+-\d+ "), ranks=5),
                     })),
    "allreduce": dict(ranks=1, base=SHM + ["-b", "1K", "-e", "4K", "-n", "2", "-w", "1", "--json", "{w}/r.json"],
                      cases=sweep_command({**COLLECTIVE, **REDUCE, **SLICE,
                                           "--algo": case(["--algo", "hier"], json_differs("config.algo")),
                                           "--protocol": case(["--protocol", "write"], json_differs("config.protocol")),
                                           # One rank is one node whatever it says: 2 ranks.
                                           "--ranks-per-node": case(["--algo", "hier", "--ranks-per-node", "1"],
                                                                    json_differs("config.nodes"), ranks=2)})),
    "allgather": dict(ranks=1, base=SHM + ["-b", "1K", "-e", "4K", "-n", "2", "-w", "1", "--json", "{w}/r.json"],
                      cases=sweep_command({**COLLECTIVE, **SLICE})),
    "reducescatter": dict(ranks=1, base=SHM + ["-b", "1K", "-e", "4K", "-n", "2", "-w", "1", "--json", "{w}/r.json"],
                          cases=sweep_command({**COLLECTIVE, **REDUCE, **SLICE})),
    "alltoall": dict(ranks=1, base=SHM + ["-b", "1K", "-e", "4K", "-n", "2", "-w", "1", "--json", "{w}/r.json"],
                     cases=sweep_command({**COLLECTIVE,
                                          "--window": case(["--window", "1"], json_differs("config.window")),
                                          # 64-element tokens: the 1K..4K sweep holds 2..8 tokens per rank.
                                          "--routing": case(["--routing", "zipf:1.2", "--hidden", "64"],
                                                            json_has("results.0.routing.expert_imbalance")),
                                          "--topk": case(["--routing", "uniform", "--hidden", "64", "--topk", "1"],
                                                         stdout_has(r"top-1;")),
                                          "--experts": case(["--routing", "uniform", "--hidden", "64", "--experts",
                                                             "4"], stdout_has(r"^# routing uniform: 4 experts")),
                                          # 1K / (2 x 32 x 4 B): 4 tokens per rank in the tokens column.
                                          "--hidden": case(["--routing", "uniform", "--hidden", "32"],
                                                           stdout_has(r"^ +1024 +256 .* 4 +[0-9.]+ +[0-9.]+$")),
                                          "--tokens-per-rank": case(["--routing", "uniform", "--tokens-per-rank", "2"],
                                                                    stdout_has(r"tokens fixed, hidden from the size"))})),
}


WL_FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workload", "fixtures")
WL_DENSE, WL_MOE = os.path.join(WL_FIXTURES, "tiny-dense.json"), os.path.join(WL_FIXTURES, "tiny-moe.json")
WL_MOE_EP = ["--model", WL_MOE, "--ep", "2", "--experts", "4"]
WL_CHAKRA = ["--trace", os.path.join(WL_FIXTURES, "outside", "tp2-dp2.chakra.{rank}.et")]
WL = SHM + ["--model", WL_DENSE, "--dp", "2", "--seq", "64", "--micro-batches", "1", "--layers", "1", "-n", "2",
            "-w", "1", "--json", "{w}/r.json"]
COMMANDS["workload"] = dict(ranks=2, base=WL, cases={
    **TRANSPORT, **OUTPUT, **TIMEOUT, **MEMORY,
    "--iters": case(["-n", "3"], json_differs("config.iters")),
    "--warmup-iters": case(["-w", "2"], json_differs("config.warmup_iters")),
    "--check": case(["-c"], stdout_has(r"^# Wrong elements : 0 OK")),
    "--model": case(["--model", WL_MOE], json_differs("config.spec.model")),
    "--tp": case(["--tp", "2"], json_differs("config.spec.tp"), ranks=4),
    "--pp": case(["--pp", "2", "--layers", "2"], json_differs("config.spec.pp"), ranks=4),
    "--dp": case(["--dp", "1", "--tp", "2"], json_differs("config.spec.dp")),
    "--ep": case(WL_MOE_EP, json_differs("config.spec.ep")),
    "--order": case(["--order", "dp-tp-pp"], json_differs("config.spec.order")),
    "--experts": case(["--model", WL_MOE, "--ep", "2", "--experts", "2"], json_differs("config.routing.experts")),
    "--topk": case(WL_MOE_EP + ["--topk", "1"], json_differs("config.routing.topk")),
    "--routing": case(WL_MOE_EP + ["--routing", "zipf:2"], json_differs("config.routing.distribution")),
    "--routing-seed": case(WL_MOE_EP + ["--routing-seed", "7"], json_differs("config.routing.seed")),
    "--seq": case(["--seq", "32"], json_differs("config.spec.seq")),
    "--micro-batch": case(["--micro-batch", "2"], json_differs("config.spec.micro_batch")),
    "--micro-batches": case(["--micro-batches", "2"], json_differs("config.spec.micro_batches")),
    "--dtype": case(["--dtype", "f32"], json_differs("config.dtype")),
    "--zero": case(["--zero", "1"], json_differs("config.spec.zero")),
    "--layers": case(["--layers", "2"], json_differs("config.spec.layers")),
    "--layers-per-op": case(["--layers-per-op", "2"], json_differs("config.spec.layers_per_op")),
    "--compute-us": case(["--compute-us", "10"], json_differs("config.spec.compute_us")),
    "--bucket": case(["--bucket", "64K"], json_differs("config.spec.bucket_bytes")),
    "--chunk": case(["--chunk", "64K"], json_differs("config.chunk_bytes")),
    **SLICE,
    "--trace": case(["--trace", os.path.join(WL_FIXTURES, "tiny-dense-tp2-dp2.trace.json")],
                    json_differs("config.trace"), ranks=4),
    "--emit-trace": case(["--emit-trace", "{w}/t.json"], file_appears("t.json")),
    "--emit-trace-format": case(["--emit-trace", "{w}/t.{rank}.et", "--emit-trace-format", "chakra"],
                                file_appears("t.0.et")),
    "--compute-scale": case(WL_CHAKRA + ["--compute-scale", "0.5"], json_differs("config.spec.compute_scale"), ranks=4),
    "--no-compute": case(WL_CHAKRA + ["--no-compute"], json_differs("config.spec.no_compute"), ranks=4),
    "--fold": case(WL_CHAKRA + ["--fold", "2"], json_differs("config.spec.fold"), ranks=2),
    "--line-rate": case(["--line-rate", "800"], json_differs("config.line_rate_gbps")),
    "--ranks-per-node": case(["--tp", "2", "--dp", "1", "--ranks-per-node", "1"], exit_is(2, r"--tp 2 is more than")),
    "--no-stragglers": case(["--no-stragglers"], json_lacks("stragglers")),
    "--straggler-threshold": case(["--straggler-threshold", "20%,50%"], json_differs("config.stragglers")),
})

KV = SHM + ["--model", "llama-3.1-8b", "--tokens", "64", "--requests", "2", "--mode", "per-block", "--json",
            "{w}/r.json"]
CUSTOM = ["--layers", "2", "--kv-heads", "2", "--head-dim", "16"]
# --find-max-rate's probes kept short (a search is a capacity probe and up to 5 probes).
KV_PROBE = ["--probe-warmup", "0.1", "--probe-duration", "0.2", "--probe-requests", "100"]
COMMANDS.update({
    "kvcache": dict(ranks=2, base=KV, cases={
        **TRANSPORT, **OUTPUT, **TIMELINE, **PATHS, **TIMEOUT,
        "--mem": case(["--mem", "cuda"], exit_is(1, "host memory only")),
        "--warmup-iters": case(["-w", "2"], json_differs("config.warmup_requests")),
        "--check": case(["-c"], stdout_has(r"^# Wrong bytes : 0 OK")),
        "--model": case(["--model", "deepseek-v3"], json_differs("config.model")),
        "--layers": case(CUSTOM, json_differs("config.layers")),
        "--kv-heads": case(CUSTOM, json_differs("config.kv_heads")),
        "--head-dim": case(CUSTOM, json_differs("config.head_dim")),
        "--latent-dim": case(["--layers", "2", "--latent-dim", "64"], json_differs("config.latent_dim")),
        "--rope-dim": case(["--layers", "2", "--latent-dim", "64", "--rope-dim", "16"], json_differs("config.rope_dim")),
        "--kv-dtype": case(["--kv-dtype", "fp8"], json_differs("config.kv_dtype")),
        "--tokens": case(["--tokens", "32"], json_differs("results.0.tokens")),
        "--block-tokens": case(["--block-tokens", "8"], json_differs("results.1.blocks")),
        "--mode": case(["--mode", "coalesced"], json_differs("results.1.mode")),
        "--prefill-ranks": case(["--prefill-ranks", "1", "--decode-ranks", "0"], json_differs("config.prefill_ranks")),
        "--decode-ranks": case(["--prefill-ranks", "1", "--decode-ranks", "0"], json_differs("config.decode_ranks")),
        "--requests": case(["--requests", "3"], json_differs("results.0.request_us.count")),
        "--concurrency": case(["--concurrency", "2"], json_differs("config.concurrency")),
        "--alloc-run": case(["--alloc-run", "2"], json_differs("config.alloc_run")),
        "--protocol": case(["--protocol", "send"], json_differs("config.protocol")),
        "--max-mem": case(["--max-mem", "1K"], exit_is(2, "--max-mem")),
        "--serve": case(["--serve", "--requests", "4"], stdout_has(r"^# serve: 4 requests")),
        "--rate": case(["--serve", "--requests", "4", "--rate", "0"], exit_is(2, "--rate 0")),
        "--burstiness": case(["--serve", "--requests", "4", "--burstiness", "0"], exit_is(2, "--burstiness 0")),
        "--duration": case(["--serve", "--rate", "200", "--duration", "0.05"], stdout_has(r"^# serve: 10 requests")),
        "--seed": case(["--serve", "--requests", "4", "--seed", "9"], stdout_has(r"seed 9, ")),
        "--slo": case(["--serve", "--requests", "4", "--slo", "p99:1s"], stdout_has(r"^# SLO p99:1s: goodput")),
        "--trace": case(["--serve", "--trace", KV_TRACE],
                        stdout_has(r"^# burstgpt trace ")),
        "--time-scale": case(["--serve", "--trace", KV_TRACE, "--time-scale", "4"],
                             stdout_has(r"--time-scale 4\)")),
        "--find-max-rate": case(["--serve", "--slo", "p99:10s", "--find-max-rate", *KV_PROBE],
                                stdout_has(r"^# max rate meeting p99:10s: ")),
        "--probe-warmup": case(["--serve", "--slo", "p99:10s", "--find-max-rate", "--probe-duration", "0.2",
                                "--probe-requests", "100", "--probe-warmup", "0.3"],
                               json_differs("max_rate.probe_warmup_s")),
        "--probe-duration": case(["--serve", "--slo", "p99:10s", "--find-max-rate", "--probe-warmup", "0.1",
                                  "--probe-requests", "100", "--probe-duration", "0.3"],
                                 json_differs("max_rate.probe_duration_s")),
        "--probe-requests": case(["--serve", "--slo", "p99:10s", "--find-max-rate", "--probe-warmup", "0.1",
                                  "--probe-duration", "0.2", "--probe-requests", "120"],
                                 json_differs("max_rate.probe_requests")),
        "--line-rate": case(["--serve", "--slo", "p99:10s", "--find-max-rate", *KV_PROBE, "--line-rate", "100"],
                            stdout_has(r"analytical capacity")),
        "--stragglers": case(["--stragglers"], json_has("stragglers")),
        "--straggler-threshold": case(["--straggler-threshold", "5%,50%"], json_differs("config.stragglers")),
        "--pin-rails": case(["--pin-rails"], json_differs("config.pin_rails")),
        "--route": case(["--serve", "--requests", "4", "--route", "least-loaded"], json_differs("config.serve.route")),
        "--decode-cache": case(["--serve", *CUSTOM, "--trace", KV_MOONCAKE, "--tokens", "trace", "--decode-cache", "8"],
                               stdout_has(r"^# prefix reuse \(--decode-cache 8 ")),
        "--decode-memory": case(["--serve", "--requests", "4", "--decode-memory", "1M"],
                                exit_is(2, r"more than --decode-memory 1M")),
        "--prefill-us-per-token": case(["--serve", "--requests", "4", "--prefill-us-per-token", "10"],
                                       stdout_has(r"^# prefill \(10 us per token")),
    }),
    # 4 ranks as 2 nodes of 2 slots: both victim placements, one aggressor pattern.
    "congestion": dict(ranks=4, base=SHM + ["--ranks-per-node", "2", "--aggressors", "incast", "-n", "2", "-w", "1",
                                            "--bw-bytes", "1K", "--window", "2", "--bw-iters", "1",
                                            "--aggressor-bytes", "1K", "--aggressor-window", "1", "--lead", "0",
                                            "--json", "{w}/r.json"],
                       cases={
                           **TRANSPORT, **TIMELINE, **PATHS, **TIMEOUT,
                           "--json": OUTPUT["--json"], "--csv": OUTPUT["--csv"], "--db": OUTPUT["--db"],
                           # Its progress is a live line only: seen on a terminal.
                           "--quiet": case(["-q"], stderr_quiet),
                           "--iters": case(["-n", "3"], json_differs("results.0.isolated.count")),
                           "--warmup-iters": case(["-w", "2"], json_differs("config.warmup_iters")),
                           "--victims": case(["--victims", "same-leaf"], json_differs("results.0.placement")),
                           "--aggressors": case(["--aggressors", "broadcast"], json_differs("results.0.aggressor")),
                           "--ranks-per-node": case(["--ranks-per-node", "1"], json_differs("config.nodes")),
                           "--slot-rails": case(["--slot-rails", "shm,shm"], json_differs("config.rails")),
                           "--bw-bytes": case(["--bw-bytes", "2K"], json_differs("config.bw_bytes")),
                           "--window": case(["--window", "4"], json_differs("config.window")),
                           "--bw-iters": case(["--bw-iters", "2"], json_differs("results.1.isolated.count")),
                           "--aggressor-bytes": case(["--aggressor-bytes", "2K"], json_differs("config.aggressor_bytes")),
                           "--aggressor-window": case(["--aggressor-window", "2"],
                                                      json_differs("config.aggressor_window")),
                           # Only time shows a nap; the walk proves the value is taken and checked.
                           "--aggressor-nap": case(["--aggressor-nap", "200000"], exit_is(2, "--aggressor-nap")),
                           "--lead": case(["--lead", "0.1"], json_differs("config.lead_s")),
                       }, tty=True),
    "info": dict(ranks=0, base=[], cases={}),
    # Two "nodes" (Slurm node names) of one GPU slot each, their rail lo.
    "validate": dict(ranks=2, nodes=True, base=["--config", "{f}/su.json", "--json", "{w}/r.json"], cases={
        "--config": case(["--config", "{f}/su-other.json"], json_differs("config.su"), drop=("--config",)),
        "--plan": case(["--plan"], stdout_has(r"^# estimate at line rate")),
        "--inventory-only": case(["--inventory-only"], json_lacks("rail_pairs")),
        # The fixture's config has no fabric section: all three are taken and refused by name
        # (the fabric phase itself is tests/netns/fabric_localize_case.sh's, the sweep
        # tests/netns/fabric_ecmp_case.sh's).
        "--fabric-only": case(["--fabric-only"], exit_is(2, "--fabric-only")),
        "--probe-rate": case(["--probe-rate", "50"], exit_is(2, "--probe-rate")),
        "--ecmp-sweep": case(["--ecmp-sweep", "1,2"], exit_is(2, "--ecmp-sweep")),
        "--transport": case(["-t", "ofi:sockets"], json_differs("transport.provider")),
        "--pair-timeout": case(["--pair-timeout", "9"], json_differs("config.pair_timeout_s")),
        "--json": OUTPUT["--json"], **METRICS,
        "--drain-list": case(["--drain-list", "{w}/drain.txt"], lambda b, r: "" if os.path.exists(
            os.path.join(r.work, "drain.txt")) else "drain.txt not written"),
        "--baseline": case(["--baseline", "{f}/v.json"], stdout_has(r"^# baseline ")),
        "--csv": OUTPUT["--csv"],
        "--db": OUTPUT["--db"],
        "--quiet": OUTPUT["--quiet"],
        "--no-counters": case(["--no-counters"], json_differs("rail_pairs.0.counters_a")),
        "--duration": case(["--duration", "1s"], json_has("burn_in")),
        "--cycles": case(["--cycles", "2"], json_has("burn_in")),
    }),
    "timeline": dict(ranks=0, base=["{f}/t.bin"], cases={
        "--csv": case(["--csv", "{w}/t.csv"], file_appears("t.csv")),
    }),
    # The baseline page compares with b.json; the --baseline case leaves it out.
    "report": dict(ranks=0, base=["{f}/a.json", "{f}/s.json", "--baseline", "{f}/b.json", "-o", "{w}/r.html"], cases={
        "--output": case(["-o", "{w}/other.html"], file_appears("other.html"), drop=("-o",)),
        "--baseline": case([], file_differs("r.html"), drop=("--baseline",)),
        "--size": case(["--size", "1K"], file_differs("r.html")),  # sendrecv's pair matrix
        "--threshold": case(["--threshold", "50"], file_differs("r.html")),
        "--db": case(["--db", "{f}/s.db"], file_differs("r.html")),  # a history section, though no finding
        "--history": case(["--history", "allreduce 1K", "--db", "{f}/s.db"], file_differs("r.html")),
    }),
    # The validate fixture: per-link series, and per-pair ones with --pairs.
    "export": dict(ranks=0, base=["{f}/v.json"], cases={
        "--format": case(["--format", "openmetrics"], stdout_has(r"^# EOF$")),
        "--output": case(["-o", "{w}/m.prom"], file_appears("m.prom")),
        "--pairs": case(["--pairs"], stdout_has(r"^railbench_pair_bandwidth_bytes_per_second\{")),
    }),
    # The run store: ingest (its options are its subcommands'), and history of the
    # fixture allreduce's 1K size, stored twice (a.json and b.json, another run).
    "db": dict(ranks=0, base=["ingest", "--db", "{w}/s.db", "{f}/a.json"], cases={}),
    "history": dict(ranks=0, base=["allreduce 1K", "--db", "{f}/s.db"], cases={
        "--db": case(["--db", "{w}/none.db"], exit_is(1, "there is none")),
        "--last": case(["--last", "1"], stdout_differs),
        "--json": case(["--json"], stdout_has(r'^\s*"things"')),
        "--csv": case(["--csv"], stdout_has(r"^thing,run,")),
    }),
    # A run against itself: no regression whatever the noise of tiny runs.
    "compare": dict(ranks=0, base=["{f}/a.json", "{f}/a.json"], cases={
        "--threshold": case(["--threshold", "50"], stdout_has(r"within \+-50%")),
        "--noise-k": case(["--noise-k", "100"], stdout_has(r"noise bands \+-100 sigma")),
        "--metrics": case(["--metrics", "time p99"], stdout_differs),
        "--json": case(["--json", "{w}/d.json"], file_appears("d.json")),
        "--csv": case(["--csv", "{w}/d.csv"], file_appears("d.csv")),
        "--all": case(["--all"], stdout_differs),
        # Two results files and no Inspector file: --job reads them as a job's and refuses.
        "--job": case(["--job"], exit_is(2, "NCCL Inspector files")),
        # Without --job, --db is refused by name.
        "--db": case(["--db", "{f}/s.db"], exit_is(2, "leave --db out, or add --job")),
    }),
})


# ---- the walk


def listed_commands():
    out = subprocess.run([RB, "--help"], capture_output=True, text=True).stdout
    part = out.split("Subcommands:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^\s+(\S+)\s", part, re.M)]


def listed_options(command):
    """The long name (or the short one, where it has none) of every option --help lists."""
    out = subprocess.run([RB, command, "--help"], capture_output=True, text=True).stdout
    part = out.split("Options:", 1)[1] if "Options:" in out else ""
    part = re.split(r"^\S", part, flags=re.M)[0]  # up to the next section
    names = []
    for line in part.splitlines():
        m = re.match(r"^  (-[^\s]+)", line)
        if not m:
            continue
        forms = m.group(1).split(",")
        longs = [f for f in forms if f.startswith("--")]
        name = longs[0] if longs else forms[0]
        if name != "--help":
            names.append(name)
    return names


def walk(command, spec):
    """Returns the failures of one command's walk."""
    failures = []
    listed = listed_options(command)
    cases = spec["cases"]
    for name in listed:
        if name not in cases:
            failures.append(f"{command} {name}: --help lists it and the walk has no proof for it")
    for name in cases:
        if name not in listed:
            failures.append(f"{command} {name}: the walk proves it, and --help does not list it")
    root = tempfile.mkdtemp(prefix=f"walk-{command}-")
    try:
        def one(label, args, ranks=None):
            work = os.path.join(root, re.sub(r"[^A-Za-z0-9]", "_", label))
            os.makedirs(work)
            t0 = time.monotonic()
            run = launch(ranks or spec["ranks"], args, work, spec.get("nodes", False), spec.get("tty", False))
            return run, time.monotonic() - t0

        def against(name, again=False):
            """The case's run and what it is compared with: the baseline, or one of its own
            with the case's ranks (`again`: always one of its own)."""
            c = cases[name]
            label = name + ("-again" if again else "")
            run = one(label, [command] + with_case(spec["base"], c), c[3])
            ref = one(label + "-baseline", [command] + spec["base"], c[3])[0] if c[3] or again else None
            return run, ref

        base, took = one("baseline", [command] + spec["base"])
        print(f"{command}: baseline exit {base.rc} ({took:.1f} s)", flush=True)
        if base.rc != 0:
            return failures + [f"{command}: the baseline run failed (exit {base.rc}): {base.err.strip()[-500:]}"]
        todo = [n for n in listed if n in cases]
        missed = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            runs = {n: pool.submit(against, n) for n in todo}
            for n in todo:
                (run, took), ref = runs[n].result()
                why = cases[n][1](ref or base, run)
                what = cases[n][1].__doc__ or ""
                print(f"{command} {' '.join(cases[n][0])}: {'ok' if not why else 'NO DIFFERENCE'} "
                      f"{what} ({took:.1f} s){': ' + why if why else ''}", flush=True)
                if why:
                    missed.append(n)
        # Runs are real, two at a time on a shared machine: a run the load cut short (a
        # deadline, a peer's timeout) shows no difference too. Such a case runs once more,
        # alone, against a fresh baseline; an option that really changes nothing fails twice.
        for n in missed:
            (run, took), ref = against(n, again=True)
            why = cases[n][1](ref, run)
            print(f"{command} {' '.join(cases[n][0])}, again, alone: {'ok' if not why else 'NO DIFFERENCE'} "
                  f"({took:.1f} s){': ' + why if why else ''}", flush=True)
            if why:
                failures.append(f"{command} {n}: {why}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return failures


VALIDATE_CONFIG = {
    "name": "walk-2x1",
    "nodes": "walk[1-2]",
    "gpus_per_node": 1,
    "transport": "ofi:tcp",
    "rails": [{"gpu": 0, "nic": "lo", "leaf": "leaf0", "speed_gbps": 10, "line_rate_gbps": 0.001, "mtu": 65536}],
    # Tiny pair tests on a loaded machine: only a link that does not work at all fails.
    "thresholds": {"bw_min_fraction": 0.01, "bidir_min_fraction": 0.01, "rel_bw_below_median": 0.01,
                   "rel_lat_above_median": 1000, "rel_lat_min_us": 1000000},
    "tests": {"bw_bytes": "4K", "bw_window": 2, "bw_iters": 1, "lat_bytes": 8, "lat_iters": 2, "collectives": False,
              "pair_timeout_s": 20},
}


def make_fixtures():
    """What the offline commands read and validate runs against: two allreduce results
    files (the second with its bandwidths 20% lower) with a timeline, a sendrecv one, and a validate config
    with an accepted run."""
    run = launch(2, ["allreduce"] + SHM + ["-b", "1K", "-e", "4K", "-n", "4", "--json", "{f}/a.json", "--timeline",
                                           "{f}/t.bin"], FIXTURES)
    if run.rc != 0:
        sys.exit(f"FAIL: the fixture run failed (exit {run.rc}): {run.err}")
    doc = json.load(open(os.path.join(FIXTURES, "a.json")))
    for r in doc["results"]:
        for side in ("out_of_place", "in_place"):
            for k in ("algbw_gbps", "busbw_gbps"):
                if k in r.get(side, {}):
                    r[side][k] *= 0.8
    doc["run_id"] = "b" * 32  # another run, for the store
    json.dump(doc, open(os.path.join(FIXTURES, "b.json"), "w"))
    run = launch(0, ["db", "ingest", "--db", "{f}/s.db", "{f}/a.json", "{f}/b.json"], FIXTURES)
    if run.rc != 0:
        sys.exit(f"FAIL: the store fixture could not be made (exit {run.rc}): {run.err}")
    run = launch(2, ["sendrecv"] + SHM + ["-b", "1K", "-e", "4K", "-n", "2", "--bw-iters", "1", "--json", "{f}/s.json"],
                 FIXTURES)
    if run.rc != 0:
        sys.exit(f"FAIL: the fixture run failed (exit {run.rc}): {run.err}")
    json.dump(VALIDATE_CONFIG, open(os.path.join(FIXTURES, "su.json"), "w"))
    json.dump({**VALIDATE_CONFIG, "name": "walk-other"}, open(os.path.join(FIXTURES, "su-other.json"), "w"))
    run = launch(2, ["validate", "--config", "{f}/su.json", "--json", "{f}/v.json"], FIXTURES, nodes=True)
    if run.rc != 0:
        sys.exit(f"FAIL: the validate fixture run did not pass (exit {run.rc}): {run.out} {run.err}")


def main():
    t0 = time.monotonic()
    make_fixtures()
    commands = listed_commands()
    failures = []
    for c in commands:
        if c not in COMMANDS:
            failures.append(f"{c}: --help lists the command and the walk has no table for it")
    for c in ONLY or commands:
        if c in COMMANDS:
            failures += walk(c, COMMANDS[c])
    shutil.rmtree(FIXTURES, ignore_errors=True)
    print(f"# {time.monotonic() - t0:.0f} s")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

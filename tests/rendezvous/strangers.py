#!/usr/bin/env python3
"""Strangers at the TCP rendezvous (lib/runtime/README.md, "The rendezvous: who may join").

    strangers.py RAILBENCH

Rank 0 of a real 2-rank job (allreduce over ofi:tcp with -c) waits for rank 1, who is
started late. Meanwhile strangers connect to its port: a port scan (connect, close),
an HTTP request, a hello with our token but a huge length, a hello with another job's
token, a hello cut short, a connection that sends nothing and is held open for the
whole run, a real railbench rank of another job (other token), then 200 connections at
once (half garbage, half silent). Checked:
  - each stranger's connection is closed by rank 0, the wrong-token ones are told why,
    and the other job's railbench exits 2 naming the job token;
  - rank 0 logs one line per refusal for the first 10 (peer address and why), then one
    count line: 207 strangers make 12 lines;
  - rank 0's peak memory (VmHWM) grows by at most BOUND_KIB while they come;
  - rank 1 then joins, and the job completes with -c (exit 0 on both ranks).
Every wait has a deadline; only processes this script started are killed.
"""
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402

MAGIC, VERSION = 0x7261696C, 4  # lib/runtime/rendezvous_frame.h kMagic, kVersion
HELLO, REFUSED = 1, 3
WRONG_TOKEN = 1
BOUND_KIB = 8 * 1024  # rank 0's VmHWM may grow by at most 8 MiB while strangers come
HELLO_SECONDS = 5  # lib/runtime/rendezvous_frame.h kHelloSeconds
LOGGED = 10  # lib/runtime/rendezvous_frame.h kLoggedRefusals


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def header(kind: int, token: str, length: int) -> bytes:
    return struct.pack("<IHHQQ", MAGIC, VERSION, kind, fnv1a64(token.encode()), length)


def hello(token: str, rank: int, size: int, length: int = 8) -> bytes:
    return header(HELLO, token, length) + struct.pack("<ii", rank, size)


def vm_hwm_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def connect(port: int, timeout: float = 5.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(None)
    return s


def answer_until_closed(s: socket.socket, seconds: float):
    """What rank 0 sends until it closes the connection: (bytes, closed_after_s or None)."""
    got = b""
    start = time.monotonic()
    s.settimeout(0.1)
    while time.monotonic() - start < seconds:
        try:
            chunk = s.recv(256)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return got, time.monotonic() - start
        if not chunk:
            return got, time.monotonic() - start
        got += chunk
    return got, None


class Failed(Exception):
    pass


def check(cond: bool, what: str):
    if not cond:
        raise Failed(what)
    print(f"ok: {what}")


def main() -> int:
    rb = sys.argv[1]
    work = rbtest.work_dir("railbench-strangers-")
    port = rbtest.free_port()
    token = f"strangers-{os.getpid()}-{port}"
    cmd = [rb, "allreduce", "-t", "ofi:tcp", "--rails", "lo", "-c", "-b", "1K", "-e", "64K", "--timeout", "40"]

    def start(rank: int, job_token: str, name: str, extra=()):
        env = rbtest.rank_env(rank, 2, port, job_token)
        out = open(os.path.join(work, f"{name}.out"), "w")
        err = open(os.path.join(work, f"{name}.err"), "w")
        p = subprocess.Popen(cmd + list(extra), env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        return rbtest.started(p)

    def text(name: str) -> str:
        with open(os.path.join(work, name)) as f:
            return f.read()

    held = []
    try:
        rank0 = start(0, token, "rank0", ["--json", os.path.join(work, "rank0.json")])
        # 1. a port scan: connect and close (also how we know rank 0 listens).
        deadline = time.monotonic() + 20
        while True:
            try:
                scan = connect(port, 1)
                break
            except OSError:
                if time.monotonic() > deadline or rank0.poll() is not None:
                    raise Failed("rank 0 never listened on its port")
                time.sleep(0.05)
        strangers = {"port scan": scan.getsockname()[1]}
        scan.close()
        time.sleep(0.2)
        baseline = vm_hwm_kib(rank0.pid)

        # 2. garbage, 3. a huge length (with our own token), 4. another job's token.
        garbage = connect(port)
        garbage.sendall(b"GET / HTTP/1.0\r\n\r\n")
        huge = connect(port)
        huge.sendall(hello(token, 1, 2, length=1 << 62))
        wrong = connect(port)
        wrong.sendall(hello("another-job", 1, 2))
        for name, s in (("garbage", garbage), ("huge length", huge), ("wrong token", wrong)):
            strangers[name] = s.getsockname()[1]
            got, closed = answer_until_closed(s, 3)
            check(closed is not None, f"{name}: rank 0 closed the connection ({closed:.2f} s)" if closed else f"{name}: closed")
            if name == "wrong token":
                check(len(got) == 28 and struct.unpack("<IHHQQI", got)[2] == REFUSED
                      and struct.unpack("<IHHQQI", got)[5] == WRONG_TOKEN
                      and struct.unpack("<IHHQQI", got)[3] == fnv1a64(b"another-job"),
                      "wrong token: told 'refused: wrong token', its own digest echoed")
            else:
                check(got == b"", f"{name}: told nothing")
            s.close()

        # 5. a hello cut short and 6. nothing at all, held open for the whole run.
        short = connect(port)
        short.sendall(hello(token, 1, 2)[:10])
        silent = connect(port)
        held.append(silent)
        strangers["cut short"] = short.getsockname()[1]
        strangers["silent"] = silent.getsockname()[1]

        # 7. a real railbench of another job on this port: refused, exit 2, says why.
        other = start(1, "another-job", "other")
        try:
            other_rc = other.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise Failed("the other job's railbench did not exit within 30 s")
        other_err = text("other.err")
        check(other_rc == 2 and "refused this rank" in other_err and "job token" in other_err,
              f"another job's railbench: exit {other_rc}, '{other_err.strip().splitlines()[-1] if other_err.strip() else ''}'")

        for name, s in (("cut short", short), ("silent", silent)):
            _, closed = answer_until_closed(s, HELLO_SECONDS + 5)
            check(closed is not None, f"{name}: closed by rank 0 after its {HELLO_SECONDS} s")
        short.close()

        # 8. 200 connections at once: even ones send garbage, odd ones nothing.
        flood = []
        for i in range(200):
            s = connect(port)
            if i % 2 == 0:
                s.sendall(b"\x16\x03\x01\x02\x00" + bytes(64))  # a TLS client hello's start
            flood.append(s)
        t = time.monotonic()
        open_ones = list(flood)
        while open_ones and time.monotonic() - t < HELLO_SECONDS + 10:
            still = []
            for s in open_ones:
                s.settimeout(0.0)
                try:
                    if s.recv(1) == b"":
                        continue
                except BlockingIOError:
                    still.append(s)
                    continue
                except ConnectionResetError:
                    continue
            open_ones = still
            time.sleep(0.1)
        check(not open_ones, f"200 at once: all closed by rank 0 within {time.monotonic() - t:.1f} s ({len(open_ones)} open)")
        for s in flood:
            s.close()

        peak = vm_hwm_kib(rank0.pid)
        check(rank0.poll() is None, "rank 0 is still waiting for rank 1")
        check(peak - baseline <= BOUND_KIB,
              f"rank 0 VmHWM {baseline} KiB before the strangers, {peak} KiB after (+{peak - baseline} KiB, bound +{BOUND_KIB})")

        # The real rank 1, late.
        rank1 = start(1, token, "rank1")
        try:
            rc0, rc1 = rank0.wait(timeout=60), rank1.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise Failed("the job did not finish within 60 s of rank 1's start")
        check(rc0 == 0 and rc1 == 0, f"the job completed with -c: exit codes {rc0} {rc1}")
        with open(os.path.join(work, "rank0.json")) as f:
            results = json.load(f)
        check(results.get("bootstrap") == "tcp" or '"bootstrap": "tcp"' in text("rank0.json"),
              "the results record the tcp bootstrap")

        # The log: first LOGGED refusals one by one, then one count line.
        err = text("rank0.err")
        lines = [l for l in err.splitlines() if l.startswith("bootstrap: refused a connection from ")]
        expect = {
            "port scan": "without sending anything",
            "garbage": 'not a railbench rank (it sent "GET / HT")',
            "huge length": "4611686018427387904 bytes announced",
            "wrong token": "wrong job token (another job on this port?)",
            "cut short": f"no complete hello within {HELLO_SECONDS} s",
            "silent": f"no complete hello within {HELLO_SECONDS} s",
        }
        for name, why in expect.items():
            line = [l for l in lines if f"127.0.0.1:{strangers[name]}: " in l]
            check(len(line) == 1 and why in line[0], f"log names the {name}: {line[0] if line else 'MISSING'}")
        check(sum("wrong job token" in l for l in lines) == 2, "log names the other job's railbench (wrong job token)")
        check(len(lines) == LOGGED, f"{len(lines)} refusals printed one by one")
        count = re.search(r"bootstrap: refused (\d+) more connection\(s\) to port \d+ \((.*)\)", err)
        total = 7 + 200
        check(count is not None and int(count.group(1)) == total - LOGGED,
              f"the rest counted in one line: {count.group(0) if count else 'MISSING'}")
        check(len([l for l in err.splitlines() if l.startswith("bootstrap:")]) == LOGGED + 2,
              f"{total} strangers made {LOGGED + 2} lines")
        print("PASS")
        return 0
    except Failed as e:
        rbtest.fail(str(e), logs=[os.path.join(work, n) for n in sorted(os.listdir(work)) if n.endswith((".out", ".err"))])
    finally:
        for s in held:
            s.close()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""lib/hostlist against ClusterShell's nodeset, on generated lists.

  hostlist_oracle.py HOSTLIST_TOOL [--lists N] [--seed S] [--cli-every K]

HOSTLIST_TOOL is tests/lib/hostlist_tool.cc (one request a line: "e EXPR", "c NAMES").
For every generated list (zero padding, gaps, several prefixes, names without digits,
rack-style names, single hosts, large ranges):
  (a) our expansion of `nodeset -f`'s folding is `nodeset -e`'s set, each name once;
  (b) our compression, expanded by nodeset, is the list's set, each name once (and by
      our own expansion too);
  (c) where at most one numeric field varies within each name pattern (one-dimensional),
      our compression is `nodeset -f`'s text exactly. Where several vary, nodeset cuts
      the set into its own n-dimensional pieces (rack[1-2]-gpu01,rack2-gpu02 where we
      write rack1-gpu01,rack2-gpu[01-02]): (b) holds there, and the count of lists
      whose text differs is printed.
The bulk runs through ClusterShell's NodeSet class, which the nodeset command prints
(str() for -f, striter() for -e); every K-th list also through the nodeset command itself.
Exits 1, never skips, when ClusterShell is missing: scripts/install-deps.sh installs it.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import rbtest  # noqa: E402

FIELD = re.compile(r"(\D*)(\d*)")  # nodeset's own cut of a name (NodeSet.base_node_re)


def import_nodeset():
    try:
        from ClusterShell.NodeSet import NodeSet  # noqa: F401
        return NodeSet
    except ImportError:
        pass
    cli = shutil.which("nodeset")
    if cli is None:
        sys.exit("FAIL: ClusterShell's nodeset is not installed (Debian: clustershell, python3-clustershell; "
                 "scripts/install-deps.sh installs them)")
    # A python3 earlier in PATH (pyenv, a venv) may not see Debian's packages: run
    # again under the interpreter the nodeset command itself uses.
    with open(cli) as f:
        shebang = f.readline()
    interp = shebang[2:].strip().split()[0] if shebang.startswith("#!") else ""
    if not interp or os.environ.get("RB_ORACLE_REEXEC") or os.path.realpath(interp) == os.path.realpath(
            sys.executable):
        sys.exit(f"FAIL: python module ClusterShell not importable (nodeset runs under '{interp}'); "
                 "install python3-clustershell (scripts/install-deps.sh)")
    os.environ["RB_ORACLE_REEXEC"] = "1"
    os.execv(interp, [interp] + sys.argv)


class Ours:
    """lib/hostlist through the test tool: one process, one line per request."""

    def __init__(self, tool):
        self.p = subprocess.Popen([tool], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline()
        if not answer:
            raise RuntimeError(f"hostlist tool ended without answering '{line[:80]}'")
        return answer.rstrip("\n")

    def expand(self, expr):
        out = self.ask("e " + expr)
        if out.startswith("error:"):
            raise RuntimeError(f"our expand of '{expr[:200]}': {out}")
        return out.split(" ") if out else []

    def compress(self, names):
        out = self.ask("c " + " ".join(names))
        if out.startswith("error:"):
            raise RuntimeError(f"our compress: {out}")
        return out


def one_dimensional(names):
    """At most one numeric field varies within each pattern (nodeset's univariate case)."""
    patterns = {}
    for n in set(names):
        parts = FIELD.findall(n)[:-1]
        key = tuple(p for p, _ in parts) + tuple(bool(i) for _, i in parts)
        patterns.setdefault(key, []).append([i for _, i in parts if i])
    for vecs in patterns.values():
        if sum(len({v[d] for v in vecs}) > 1 for d in range(len(vecs[0]))) > 1:
            return False
    return True


def index(rng, width):
    value = rng.choice([rng.randrange(0, 12), rng.randrange(0, 130), rng.randrange(0, 1100)])
    return f"{value:0{width}d}"


def some(rng, lo, hi, keep):
    return [v for v in range(lo, hi) if rng.random() < keep]


# The kinds of lists, each a function of a Random: what clusters are named like.
def padded(rng):
    width = rng.choice([2, 3, 4])
    return [f"gpu{v:0{width}d}" for v in some(rng, 0, rng.choice([20, 120, 300]), rng.choice([0.2, 0.7, 0.95]))]


def unpadded(rng):
    lo = rng.choice([0, 1, 5, 90, 995])
    return [f"node{v}" for v in some(rng, lo, lo + rng.randrange(2, 40), 0.6)]


def mixed_padding(rng):
    return [f"gpu{index(rng, rng.choice([0, 0, 2, 3]))}" for _ in range(rng.randrange(1, 30))]


def padding_edges(rng):
    """Around the digit boundaries, where padded and unpadded runs meet: 9/09/010/10."""
    values = [v for b in (0, 10, 100, 1000) for v in range(max(b - 3, 0), b + 3)]
    return [f"gpu{v:0{rng.randrange(0, 5)}d}" for v in rng.sample(values, rng.randrange(1, len(values)))]


def several_prefixes(rng):
    out = []
    for prefix in rng.sample(["gpu", "node", "cpu", "login", "n", "dgx-a100-", "h100x"], rng.randrange(2, 5)):
        width = rng.choice([0, 2, 3])
        out += [f"{prefix}{v:0{width}d}" for v in some(rng, 1, rng.randrange(2, 50), 0.5)]
    out += rng.sample(["login", "mgmt", "head", "a", "b"], rng.randrange(0, 3))
    return out


def suffixes(rng):
    suffix = rng.choice([".cluster", "-ib", "x", "-eth0"])
    return [f"n{v:02d}{suffix}" for v in some(rng, 1, 30, 0.5)] + [f"n{v}y" for v in some(rng, 1, 5, 0.5)]


def rack_one_field(rng):
    rack, gpu = rng.randrange(1, 9), rng.randrange(1, 17)
    if rng.random() < 0.5:
        return [f"rack{rack}-gpu{v:02d}" for v in some(rng, 1, 33, 0.6)]
    return [f"rack{v}-gpu{gpu:02d}" for v in some(rng, 1, 12, 0.6)]


def rack_grid(rng):
    racks, gpus = rng.randrange(1, 6), rng.randrange(1, 17)
    keep = rng.choice([1.0, 0.9, 0.5])
    return [f"rack{r}-gpu{g:02d}" for r in range(1, racks + 1) for g in range(1, gpus + 1) if rng.random() < keep]


def single(rng):
    return [rng.choice(["gpu017", "node1", "login", "rack3-gpu07", "7"])]


def large(rng):
    n = rng.choice([1024, 4096])
    gaps = set(rng.sample(range(n), rng.randrange(0, 6)))
    return [f"gpu{v:04d}" for v in range(1, n + 1) if v not in gaps]


def duplicates_unsorted(rng):
    names = [f"gpu{v:03d}" for v in some(rng, 1, 40, 0.5)] or ["gpu001"]
    names += rng.choices(names, k=len(names))
    rng.shuffle(names)
    return names


KINDS = [padded, unpadded, mixed_padding, padding_edges, several_prefixes, suffixes, rack_one_field, rack_grid, single, large,
         duplicates_unsorted]

# Hand-written cases, exactly: the edges of padding and of width (a shorter index first, a
# range that never mixes paddings) where a generator's cases rarely land.
FIXED = [
    (["gpu003", "gpu017", "gpu018"], "gpu[003,017-018]"),
    (["gpu9", "gpu10"], "gpu[9-10]"),
    (["gpu01", "gpu1", "gpu2", "gpu02"], "gpu[1-2,01-02]"),
    (["rack1-gpu01", "rack1-gpu02", "rack2-gpu01", "rack2-gpu02"], "rack[1-2]-gpu[01-02]"),
    (["node04"], "node04"),
    (["x8", "x9", "x010"], "x[8-9,010]"),
    (["x099", "x0100"], "x[099,0100]"),
    (["y001", "y999", "y1000"], "y[001,999,1000]"),  # 999 is in width-3 mode here
    (["y998", "y999", "y1000"], "y[998-1000]"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("--lists", type=int, default=400)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--cli-every", type=int, default=40, help="also run every K-th list through the nodeset command")
    args = ap.parse_args()
    NodeSet = import_nodeset()
    cli = shutil.which("nodeset")
    if cli is None:
        sys.exit("FAIL: the nodeset command is missing (Debian package clustershell; scripts/install-deps.sh)")
    ours = Ours(args.tool)
    rng = random.Random(args.seed)
    failures = []
    counts = {"lists": 0, "one_dim_exact": 0, "multi_dim": 0, "multi_dim_same_text": 0, "cli": 0}

    def nodeset_expand(expr):
        try:
            return list(NodeSet(expr).striter())
        except Exception as e:  # a compression nodeset cannot even read
            failures.append(f"nodeset cannot read our '{expr[:120]}': {e}")
            return []

    def check(names, kind, expect=None):
        want = set(names)
        folded = str(NodeSet.fromlist(names))
        theirs = list(NodeSet(folded).striter())
        got = ours.expand(folded)  # (a)
        if set(got) != set(theirs) or len(got) != len(theirs):
            failures.append(f"{kind} (a): our expand of nodeset's '{folded[:120]}' differs from nodeset -e")
        mine = ours.compress(names)  # (b)
        back = nodeset_expand(mine)
        ours_back = ours.expand(mine) if mine else []
        if set(back) != want or len(back) != len(want) or set(ours_back) != want or len(ours_back) != len(want):
            failures.append(f"{kind} (b): our '{mine[:120]}' does not expand to the list's {len(want)} names")
        if expect is not None and mine != expect:
            failures.append(f"{kind}: our '{mine}' != the expected '{expect}'")
        if one_dimensional(names):  # (c)
            if mine != folded:
                failures.append(f"{kind} (c): our '{mine[:150]}' != nodeset -f '{folded[:150]}'")
            else:
                counts["one_dim_exact"] += 1
        else:
            counts["multi_dim"] += 1
            counts["multi_dim_same_text"] += mine == folded
        counts["lists"] += 1
        if counts["lists"] % args.cli_every == 1:  # the command itself agrees with its class
            counts["cli"] += 1
            f = subprocess.run([cli, "-f"] + sorted(want), capture_output=True, text=True, check=True).stdout.strip()
            e = subprocess.run([cli, "-e", mine], capture_output=True, text=True, check=True).stdout.split()
            if f != folded or set(e) != want:
                failures.append(f"{kind}: the nodeset command disagrees with NodeSet ('{f[:80]}' vs '{folded[:80]}')")

    for names, expect in FIXED:
        check(names, "fixed", expect)
    for i in range(args.lists):
        kind = KINDS[i % len(KINDS)]
        names = kind(rng) or [f"gpu{i}"]
        check(names, kind.__name__)
    ours.p.stdin.close()
    ours.p.wait()

    print(f"hostlist oracle: {counts['lists']} lists (seed {args.seed}); one-dimensional, identical to nodeset -f: "
          f"{counts['one_dim_exact']}; several fields varying, same set: {counts['multi_dim']} "
          f"(of which identical text: {counts['multi_dim_same_text']}); through the nodeset command: {counts['cli']}")
    if failures:
        rbtest.fail(f"{len(failures)} check(s) failed, the first ones:\n" + "\n".join("  " + f for f in failures[:15]))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Lists the longest function bodies in C++ sources (a reviewer's aid, not a parser).

  scripts/dev/function-lengths.py [--top N] [--over LINES] DIR_OR_FILE...

A function is a top-level or namespace-level `{` block whose opening line looks like a
definition (has a parenthesis and no `class`/`struct`/`namespace`/`enum` keyword);
lambdas and member functions defined inside a class body count toward their enclosing
function or class, so the class itself is not listed."""
import argparse
import os
import re
import sys

HEAD = re.compile(r"^\s*(?!namespace|class|struct|enum|union|extern|if|for|while|switch|else|do|try|catch)[^;#{}]*\)[^;{}]*\{\s*(//.*)?$")


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    depth = 0
    out = []
    start = None
    name = None
    ns_depth = 0
    for i, line in enumerate(lines):
        code = re.sub(r'"(\\.|[^"\\])*"', '""', line.split("//")[0])
        code = re.sub(r"'(\\.|[^'\\])'", "''", code)
        if start is None and depth == ns_depth and re.match(r"^\s*namespace\b.*\{", code):
            ns_depth += code.count("{") - code.count("}")
            depth += code.count("{") - code.count("}")
            continue
        if start is None and depth == ns_depth:
            joined = code
            # a definition's head may span lines: look back for the parenthesis
            back = i
            while "(" not in joined and back > 0 and lines[back - 1].strip() and not lines[back - 1].strip().endswith((";", "}", "{")):
                back -= 1
                joined = lines[back] + joined
            if "{" in code and HEAD.match(code) or ("{" in code and code.strip() == "{" and ")" in lines[i - 1]):
                start = back
                m = re.search(r"([\w:~<>]+)\s*\(", " ".join(lines[back:i + 1]))
                name = m.group(1) if m else "?"
        depth += code.count("{") - code.count("}")
        if depth < ns_depth:
            ns_depth = depth
        if start is not None and depth == ns_depth:
            out.append((i - start + 1, name, path, start + 1))
            start = None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--over", type=int, default=0)
    a = ap.parse_args()
    found = []
    for p in a.paths:
        files = [p] if os.path.isfile(p) else [os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs]
        for f in files:
            if f.endswith((".cc", ".h", ".cu")):
                found += functions(f)
    found.sort(reverse=True)
    shown = [f for f in found if f[0] > a.over] if a.over else found[: a.top]
    for n, name, path, line in shown:
        print(f"{n:5d}  {name}  {path}:{line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

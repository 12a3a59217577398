#!/usr/bin/env python3
"""Checks railbench's Markdown: every relative link and #anchor resolves, and every
subcommand `railbench --help` lists has a guide linked from README.md's subcommand table.

  scripts/dev/check-docs.py [--root DIR] PATH/TO/railbench

(a) In every *.md of the tree (build*/ folders and .git left out), each relative link
    [text](path), [text](path#anchor), [text](#anchor) and ![alt](path) must name a file
    or folder that exists, and an anchor must match the GitHub-style slug of a heading in
    the target Markdown file. Links inside code (fenced blocks, `inline code`) are text.
(b) Every subcommand in `railbench --help` must have a row in README.md's subcommand table
    (a row whose first cell is `name`) that links a guide; the guide must exist and
    mention the subcommand.

Exit 0 when all is well; 1 with one "file:line: problem: fix" line per problem; 2 on bad
use (no binary, a binary that does not run, help text without a subcommand list)."""
import argparse
import os
import re
import subprocess
import sys
from urllib.parse import unquote

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def markdown_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git" and not d.startswith("build"))
        for name in sorted(filenames):
            if name.endswith(".md"):
                yield os.path.join(dirpath, name)


def text_lines(path):
    """(line number, line) of the Markdown text outside fenced code, inline code blanked."""
    return [(lineno, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), line))
            for lineno, line in text_lines_raw_headings(path)]


def slugify(heading):
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed
    (word characters, spaces and hyphens kept), each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchor_cache = {}


def anchors(path):
    if path not in _anchor_cache:
        found = set()
        counts = {}
        for _, line in text_lines_raw_headings(path):
            m = HEADING.match(line)
            if m:
                slug = slugify(m.group(2))
                n = counts.get(slug, 0)
                counts[slug] = n + 1
                found.add(slug if n == 0 else f"{slug}-{n}")
            for a in HTML_ANCHOR.findall(line):
                found.add(a)
        _anchor_cache[path] = found
    return _anchor_cache[path]


def text_lines_raw_headings(path):
    """Lines outside fenced code, inline code kept (a heading's `code` is part of its slug)."""
    fence = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                mark = m.group(1)
                if fence is None:
                    fence = mark[0] * 3
                elif mark.startswith(fence):
                    fence = None
                continue
            if fence is None:
                yield lineno, line


def check_links(root, problems):
    for path in markdown_files(root):
        rel = os.path.relpath(path, root)
        for lineno, line in text_lines(path):
            targets = [m.group(1) for m in LINK.finditer(line)]
            m = REF_DEF.match(line)
            if m:
                targets.append(m.group(1))
            for target in targets:
                if EXTERNAL.match(target):
                    continue
                file_part, _, anchor = target.partition("#")
                file_part = unquote(file_part)
                if file_part:
                    dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                    if not os.path.exists(dest):
                        problems.append(f"{rel}:{lineno}: link to '{target}': {os.path.relpath(dest, root)} "
                                        "does not exist: fix the path (relative to this file) or drop the link")
                        continue
                else:
                    dest = path
                if anchor:
                    if not dest.endswith(".md") or os.path.isdir(dest):
                        continue  # an anchor into source or HTML is not ours to check
                    if unquote(anchor).lower() not in anchors(dest):
                        near = sorted(a for a in anchors(dest) if a.split("-")[0] == anchor.split("-")[0])
                        hint = f" (headings there with a similar start: {', '.join('#' + a for a in near[:4])})" \
                            if near else ""
                        problems.append(f"{rel}:{lineno}: link to '{target}': no heading in "
                                        f"{os.path.relpath(dest, root)} has the anchor #{anchor}{hint}: "
                                        "point it at an existing heading's slug")


def subcommands(binary):
    try:
        out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SystemExit(f"check-docs: cannot run '{binary} --help': {e}")
    if out.returncode != 0:
        raise SystemExit(f"check-docs: '{binary} --help' exited {out.returncode}: {out.stderr.strip()}")
    names = []
    in_list = False
    for line in out.stdout.splitlines():
        if line.strip() == "Subcommands:":
            in_list = True
            continue
        if in_list:
            m = re.match(r"^\s+([a-z][a-z0-9-]*)(\s{2,}|$)", line)
            if m:
                names.append(m.group(1))
            elif line.strip():
                break
    if not names:
        raise SystemExit(f"check-docs: '{binary} --help' lists no subcommands (no 'Subcommands:' section)")
    return names


def check_guides(root, names, problems):
    readme = os.path.join(root, "README.md")
    if not os.path.exists(readme):
        problems.append("README.md:1: missing: the front page with the subcommand table")
        return
    rows = {}
    for lineno, line in text_lines_raw_headings(readme):
        m = re.match(r"^\s*\|\s*`([a-z][a-z0-9-]*)`", line)
        if m and m.group(1) not in rows:
            rows[m.group(1)] = (lineno, line)
    for name in names:
        if name not in rows:
            problems.append(f"README.md:1: subcommand '{name}' (from railbench --help) has no row in the "
                            f"subcommand table: add '| `{name}` | what it does | [guide](path/README.md) |'")
            continue
        lineno, line = rows[name]
        links = [t for t in (m.group(1) for m in LINK.finditer(line))
                 if not EXTERNAL.match(t) and t.partition("#")[0].endswith(".md")]
        if not links:
            problems.append(f"README.md:{lineno}: subcommand '{name}' links no guide: link the .md that "
                            "describes it")
            continue
        guide = os.path.normpath(os.path.join(root, unquote(links[0].partition("#")[0])))
        if not os.path.isfile(guide):
            continue  # reported by the link check
        with open(guide, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if not re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text):
            problems.append(f"README.md:{lineno}: subcommand '{name}' links {os.path.relpath(guide, root)}, "
                            f"which never mentions '{name}': link the guide that describes it, or describe it there")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("railbench", help="the railbench binary whose --help lists the subcommands")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                    help="the source tree (default: this script's ../..)")
    try:
        args = ap.parse_args()
    except SystemExit as e:
        return 2 if e.code else 0
    root = os.path.abspath(args.root)
    if not os.path.isfile(os.path.join(root, "README.md")) or not os.path.isdir(os.path.join(root, "lib")):
        print(f"check-docs: {root} is not railbench's source tree (no README.md and lib/): give it with --root",
              file=sys.stderr)
        return 2
    if not (os.path.isfile(args.railbench) and os.access(args.railbench, os.X_OK)):
        print(f"check-docs: '{args.railbench}' is not an executable file: give the built railbench "
              "(e.g. build/railbench)", file=sys.stderr)
        return 2
    try:
        names = subcommands(args.railbench)
    except SystemExit as e:
        print(e.code, file=sys.stderr)
        return 2
    problems = []
    check_links(root, problems)
    check_guides(root, names, problems)
    for p in problems:
        print(p)
    if problems:
        print(f"check-docs: {len(problems)} problem(s) in the Markdown", file=sys.stderr)
        return 1
    print(f"check-docs: every link and anchor resolves; {len(names)} subcommands, each with a guide")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""An independent reader of the --timeline file format (README "Timeline file"), so the
tests check the format as documented rather than railbench's own reader.

    read_timeline.py FILE            prints a summary
    import read_timeline; t = read_timeline.read(path)
"""
import struct
import sys

SERIES = ["tx", "rx", "iface_tx", "iface_rx"]


def read(path):
    data = open(path, "rb").read()
    if data[:8] != b"RBTLINE\0":
        raise ValueError(f"{path}: no RBTLINE magic")
    version, ranks, rails, nseries, bucket_us, _reserved, buckets, start_ns = struct.unpack_from("<6IQq", data, 8)
    if version != 1 or nseries != 4:
        raise ValueError(f"{path}: version {version}, {nseries} series")
    pos = 48
    per_rank = []
    for _ in range(ranks):
        per_rank.append(struct.unpack_from("<3Q", data, pos))  # overflow, dropped marks, marks
        pos += 24
    flags = data[pos:pos + ranks * rails * 4]
    pos += ranks * rails * 4
    pos = (pos + 7) // 8 * 8
    series = {}
    for i, present in enumerate(flags):
        if not present:
            continue
        rank, rest = divmod(i, rails * 4)
        rail, s = divmod(rest, 4)
        series[(rank, rail, SERIES[s])] = list(struct.unpack_from(f"<{buckets}Q", data, pos))
        pos += 8 * buckets
    marks = []
    for rank in range(ranks):
        n = per_rank[rank][2]
        marks.append([struct.unpack_from("<Qqq", data, pos + 24 * k) for k in range(n)])
        pos += 24 * n
    if pos != len(data):
        raise ValueError(f"{path}: {len(data) - pos} bytes after the last mark")
    return {
        "ranks": ranks, "rails": rails, "bucket_us": bucket_us, "buckets": buckets, "start_unix_ns": start_ns,
        "overflow": [p[0] for p in per_rank], "dropped_marks": [p[1] for p in per_rank], "series": series,
        "marks": marks,
    }


if __name__ == "__main__":
    t = read(sys.argv[1])
    print(f"{t['ranks']} ranks, {t['rails']} rails, {t['buckets']} x {t['bucket_us']} us")
    for (rank, rail, name), values in sorted(t["series"].items()):
        print(f"rank {rank} rail {rail} {name}: {sum(values)} B, peak {max(values or [0])} B/bucket")

#!/usr/bin/env python3
"""Prints the "fabric" section of a validate config for a simulated fabric (up.sh --sus/--spines).

  fabric-config.py                 the fabric that is up (RB_SU_PREFIX / RB_SU_STATE, as the
                                   other netns-su scripts find it)
  fabric-config.py --sus S --nodes N --rails R --spines K --net 10.X [--rate M] [--oversubscription F]
                                   the fabric up.sh would build with those options
  --json                           a JSON object {"fabric": {...}} instead of the section's text

The text is the section as configs/netns-2su-4x2-4spine.json holds it (a member of the
top-level object, two spaces in, comments included): paste it into a copy of that config
whose "nodes" and "rails" match. Names and addresses follow scripts/netns-su/lib.sh.
"""
import argparse
import json
import os
import sys


def die(msg):
    print(f"fabric-config: error: {msg}", file=sys.stderr)
    sys.exit(2)


def read_state():
    prefix = os.environ.get("RB_SU_PREFIX", "rbsu")
    state = os.environ.get("RB_SU_STATE", f"/run/railbench-netns-su/{prefix}")
    path = os.path.join(state, "su.env")
    if not os.path.isfile(path):
        die(f"no simulated SU is up ({path} missing): bring one up with scripts/netns-su/up.sh --sus S --spines K, "
            "or give --sus --nodes --rails --spines --net")
    env = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.strip().partition("=")
            if sep:
                env[key] = value.strip('"')
    if env.get("RB_SU_FABRIC") != "1":
        die(f"the SU in {state} is not a fabric (up.sh without --sus/--spines): it has no fabric section")
    return {"sus": int(env["RB_SU_SUS"]), "nodes": int(env["RB_SU_SU_NODES"]), "rails": int(env["RB_SU_RAILS"]),
            "spines": int(env["RB_SU_SPINES"]), "net": env["RB_SU_NET"], "uplink_mbit": int(env["RB_SU_UPLINK"])}


def fabric(sus, nodes, rails, spines, net, uplink_mbit):
    def rail_net(s, r):
        return f"{net}.{16 * (s - 1) + r}"

    def link_addr(s, r, k, end):  # end 1: the leaf's, 2: the spine's
        return f"{net}.{128 + 8 * (s - 1) + r}.{4 * k + end}"

    def hosts(s):
        first, last = (s - 1) * nodes + 1, s * nodes
        return f"node{first:02d}" if first == last else f"node[{first:02d}-{last:02d}]"

    leaves, links = [], []
    for s in range(1, sus + 1):
        for r in range(rails):
            leaf = f"su{s}-leaf{r}"
            addresses = [f"{rail_net(s, r)}.254"] + [link_addr(s, r, k, 1) for k in range(spines)]
            leaves.append({"name": leaf, "su": f"su{s}", "rail": r, "addresses": addresses})
            for k in range(spines):
                links.append({"name": f"{leaf}-spine{k}", "leaf": leaf, "leaf_port": f"spine{k}",
                              "leaf_address": link_addr(s, r, k, 1), "spine": f"spine{k}",
                              "spine_port": f"s{s}l{r}", "spine_address": link_addr(s, r, k, 2)})
    return {"sus": [{"name": f"su{s}", "nodes": hosts(s)} for s in range(1, sus + 1)],
            "spines": [f"spine{k}" for k in range(spines)],
            "uplink_gbps": float(f"{uplink_mbit / 1000:g}"),
            "leaves": leaves, "links": links}


def section_text(fab):
    """The section as the config file holds it: one entry per line, comments that say what."""
    one = lambda v: json.dumps(v, separators=(", ", ": "))  # noqa: E731
    gbps = f"{fab['uplink_gbps']:g}"
    lines = ['  "fabric": {',
             f'    "sus": {one(fab["sus"])},',
             f'    "spines": {one(fab["spines"])},',
             "    // each leaf-spine link's rate, both directions (node rate x nodes per SU / oversubscription / spines)",
             f'    "uplink_gbps": {gbps},',
             "    // every leaf (one per SU and rail) and the addresses a probe sees from it (its SVI and its link ends)",
             '    "leaves": [']
    lines += [f"      {one(leaf)}," for leaf in fab["leaves"]]
    lines[-1] = lines[-1].rstrip(",")
    lines += ["    ],",
              "    // every leaf-spine link: the leaf's port (spine<k>) and address, the spine's port (s<su>l<rail>) and address",
              '    "links": [']
    lines += [f"      {one(link)}," for link in fab["links"]]
    lines[-1] = lines[-1].rstrip(",")
    lines += ["    ]", "  }"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for opt in ("--sus", "--nodes", "--rails", "--spines", "--rate"):
        ap.add_argument(opt, type=int)
    ap.add_argument("--oversubscription", type=float, default=1.0)
    ap.add_argument("--net", help="10.X, as RB_SU_NET")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    shape = (a.sus, a.nodes, a.rails, a.spines, a.net)
    if all(v is None for v in shape):
        f = read_state()
    elif any(v is None for v in shape):
        die("give all of --sus --nodes --rails --spines --net (or none, for the fabric that is up)")
    else:
        if not (a.net.startswith("10.") and a.net[3:].isdigit() and 0 <= int(a.net[3:]) <= 255):
            die(f"--net {a.net}: give 10.X, as RB_SU_NET")
        rate = a.rate if a.rate is not None else 400
        uplink = max(1, int(a.nodes * rate / a.oversubscription / a.spines))
        f = {"sus": a.sus, "nodes": a.nodes, "rails": a.rails, "spines": a.spines, "net": a.net, "uplink_mbit": uplink}
    fab = fabric(**f)
    print(json.dumps({"fabric": fab}, indent=2) if a.json else section_text(fab))


if __name__ == "__main__":
    main()

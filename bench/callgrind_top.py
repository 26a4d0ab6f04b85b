#!/usr/bin/python3
"""The self cost (instructions) per function and per object of a callgrind output file, without
callgrind_annotate (whose summary of a dump made by a client request attributes everything to one function).

  /usr/bin/python3 bench/callgrind_top.py FILE [--top 25] [--per N]   (--per: also divide by N, e.g. probes)
"""
import argparse
import collections
import re


def self_costs(path):
    names = {"fn": {}, "ob": {}, "fl": {}}
    fn_cost = collections.Counter()
    ob_cost = collections.Counter()
    fn = ob = None
    skip_next = False
    total = 0
    summary = None
    rx = re.compile(r"^(c?)(fn|ob|fl|fi|fe)=\((\d+)\)(?: (.*))?$")
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = rx.match(line)
            if m:
                callee, kind, num, name = m.groups()
                table = names["fl" if kind in ("fi", "fe") else kind]
                if name:
                    table[num] = name
                if not callee:
                    if kind == "fn":
                        fn = (table.get(num, num), names["ob"].get(ob_id, "?") if ob_id else "?")
                    elif kind == "ob":
                        ob_id = num
                continue
            if line.startswith("summary:"):
                summary = int(line.split()[1])
                continue
            if line.startswith("calls="):
                skip_next = True
                continue
            if line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                if skip_next:
                    skip_next = False
                    continue
                if len(parts) >= 2 and fn:
                    c = int(parts[1])
                    fn_cost[fn] += c
                    ob_cost[fn[1]] += c
                    total += c
    return summary or total, fn_cost, ob_cost


ob_id = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--per", type=float, default=0)
    a = ap.parse_args()
    total, fns, obs = self_costs(a.file)
    per = f" ({total / a.per:.0f} per unit)" if a.per else ""
    print(f"total {total}{per}")
    print("by object:")
    for ob, c in obs.most_common(12):
        print(f"  {c:>12} {100 * c / total:5.1f}%  {ob}")
    print("by function (self):")
    for (fn, ob), c in fns.most_common(a.top):
        print(f"  {c:>12} {100 * c / total:5.1f}%  {fn}  [{ob.rsplit('/', 1)[-1]}]")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Fail when the folders under src/ include each other in a cycle.

Every `#include "folder/file.h"` in src/<a>/*.{c,h} is an edge a -> folder (a folder including itself is
fine). The folder graph must be acyclic: dependencies between src/ folders point one way. Prints each cycle
found with one include line per edge, and exits 1; prints the folder order (lowest layer first) and exits 0
otherwise.

Within src/kubelet, one more layer rule (issue 28): the pod sync passes (pod_sync.c, sync_*.c and their headers)
see the kubelet only through struct pod_sync_env (pod_sync_env.h). None of them may include kubelet-internal.h or
name struct kubelet; each violation is printed with its line and the check exits 1.
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]+"')


def edges():
    out = {}
    for folder in sorted(os.listdir(SRC)):
        path = os.path.join(SRC, folder)
        if not os.path.isdir(path):
            continue
        out.setdefault(folder, {})
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(path, name), encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m and m.group(1) != folder and os.path.isdir(os.path.join(SRC, m.group(1))):
                        out[folder].setdefault(m.group(1), f"src/{folder}/{name}:{lineno}: {line.strip()}")
    return out


PASS_FILE = re.compile(r"^(pod_sync|sync_\w+)\.[ch]$")
PASS_FORBIDDEN = re.compile(r'#\s*include\s+"kubelet/kubelet-internal\.h"|\bstruct\s+kubelet\b(?!_)|->k->')


def pass_violations():
    out = []
    d = os.path.join(SRC, "kubelet")
    for name in sorted(os.listdir(d)):
        if not PASS_FILE.match(name):
            continue
        with open(os.path.join(d, name), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if PASS_FORBIDDEN.search(line):
                    out.append(f"src/kubelet/{name}:{lineno}: {line.strip()}")
    return out


def main():
    bad = pass_violations()
    if bad:
        print("a pod sync pass reaches the kubelet outside struct pod_sync_env (pod_sync_env.h):")
        for b in bad:
            print("  " + b)
        return 1
    g = edges()
    # Tarjan's strongly connected components
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in g:
        if v not in index:
            visit(v)
    cycles = [sorted(c) for c in sccs if len(c) > 1]
    if cycles:
        for comp in cycles:
            print(f"include cycle between src/ folders: {' <-> '.join(comp)}")
            for a in comp:
                for b, where in sorted(g[a].items()):
                    if b in comp:
                        print(f"  {a} -> {b}: {where}")
        return 1
    # Tarjan emits components in reverse topological order: lowest layer first
    print("src/ folders, lowest layer first: " + " ".join(c[0] for c in sccs))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The pod sync pass is one table of phases (src/kubelet/pod_sync.c); src/kubelet/pod_sync.h lists them with their
files and docs/design.md has them as a table. Check that the three agree: the same phases, in the same order,
in the same files. Exit 1 (and say where) when they do not."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def read(path):
    with open(os.path.join(root, path)) as f:
        return f.read()


code = re.findall(r'\[POD_SYNC_\w+\] = \{ "([^"]+)"', read("src/kubelet/pod_sync.c"))
header = re.findall(r"^ \*   (\w+(?: \w+)?)\s{2,}(\w+\.c)\s", read("src/kubelet/pod_sync.h"), re.M)
design = re.findall(r"^\| ([a-z][a-z ]*?) \| `(\w+\.c)` \|", read("docs/design.md"), re.M)

problems = []
if not code:
    problems.append("src/kubelet/pod_sync.c: no phase table found")
if [n for n, _ in header] != code:
    problems.append(f"src/kubelet/pod_sync.h lists {[n for n, _ in header]}, pod_sync.c's table has {code}")
if [n for n, _ in design] != code:
    problems.append(f"docs/design.md's table lists {[n for n, _ in design]}, pod_sync.c's table has {code}")
if header != design:
    problems.append(f"the files differ: pod_sync.h {header}, docs/design.md {design}")
for _, f in header:
    if not os.path.exists(os.path.join(root, "src/kubelet", f)):
        problems.append(f"pod_sync.h names src/kubelet/{f}, which does not exist")
for p in problems:
    print("check-phase-table:", p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"the pod sync pass: {len(code)} phases, the same in pod_sync.c, pod_sync.h and docs/design.md: {', '.join(code)}")

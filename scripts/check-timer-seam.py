#!/usr/bin/env python3
"""Fail when a file under src/ arms a timer other than through the loop's timer seam.

The seam is src/basic/timer.h: evtimer_add_usec() for timers, event_add_usec() for an fd event with a timeout.
It honours the virtual clock of the unit tests (src/basic/vclock.h); a timeout armed with libevent's own calls
runs on real time whatever the test's clock says. Outside the seam's own files (src/basic/timer.c,
src/basic/vclock.c), this check fails on:

  - evtimer_add(...) / evtimer_add_tv-like calls: always a timeout;
  - event_add(ev, tv), evsignal_add(ev, tv) with a timeout other than NULL (an fd or signal event added with NULL
    waits for its fd or signal only, which is no timer);
  - event_base_once() and event_base_loopexit() with a timeout other than NULL;
  - libevent's HTTP, bufferevent and DNS timeouts (evhttp_set_timeout, evhttp_connection_set_timeout,
    bufferevent_set_timeouts with a timeout other than NULL, evdns_base_set_option), except the few listed in
    ALLOWED with the reason they cannot go through the seam.

Comments and string literals are ignored; a call may span lines. Prints each violation with its file and line
and exits 1, and fails too on an ALLOWED entry that no longer matches (remove it); prints a summary and exits 0
otherwise.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
SEAM = {"src/basic/timer.c", "src/basic/vclock.c"}
SEAM_CALLS = re.compile(r"\b(evtimer_add_usec|event_add_usec)\s*\(")

# (file, call) -> why libevent arms this timeout itself
ALLOWED = {
    ("src/server/server.c", "evhttp_set_timeout"):
        "evhttp's own read/write timeout on each API connection (libevent arms it on the connection's "
        "bufferevent); the server's own deadlines (server/conn.c) go through the seam",
    ("src/server/logs.c", "bufferevent_set_timeouts"):
        "the write timeout of a followed log's evhttp connection (libevent arms it on the bufferevent)",
}

# call -> index of the timeout argument that must be NULL (None: any call is a timeout)
CALLS = {
    "evtimer_add": None,
    "event_add": 1,
    "evsignal_add": 1,
    "event_base_once": 5,
    "event_base_loopexit": 1,
    "bufferevent_set_timeouts": (1, 2),
    "evhttp_set_timeout": None,
    "evhttp_set_timeout_tv": None,
    "evhttp_connection_set_timeout": None,
    "evhttp_connection_set_timeout_tv": None,
    "evhttp_connection_set_initial_retry_tv": None,
    "evdns_base_set_option": None,
}
CALL = re.compile(r"\b(" + "|".join(sorted(CALLS, key=len, reverse=True)) + r")\s*\(")


def strip(text):
    """Blank out comments, string and character literals, keeping newlines (line numbers stay right)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def arguments(text, start):
    """The top-level arguments of the call whose '(' is at start, stripped."""
    args, depth, cur = [], 0, []
    for ch in text[start:]:
        if ch in "([{":
            depth += 1
            if depth == 1:
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args
        elif ch == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    return args


def is_null(arg):
    return re.fullmatch(r"\(?\s*(NULL|0|\(\s*(const\s+)?struct\s+timeval\s*\*\s*\)\s*(NULL|0))\s*\)?", arg) is not None


def main():
    violations, allowed_seen, seam_calls, seam_files = [], set(), 0, set()
    for dirpath, dirnames, filenames in os.walk(SRC):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, ROOT)
            with open(path, encoding="utf-8") as f:
                raw = f.read()
            text = strip(raw)
            lines = raw.splitlines()
            n_seam = len(SEAM_CALLS.findall(text))
            if n_seam:
                seam_calls += n_seam
                seam_files.add(rel)
            if rel in SEAM:
                continue
            for m in CALL.finditer(text):
                call = m.group(1)
                rule = CALLS[call]
                if rule is not None:
                    args = arguments(text, m.end() - 1)
                    idx = rule if isinstance(rule, tuple) else (rule,)
                    if all(i < len(args) and is_null(args[i]) for i in idx):
                        continue
                if (rel, call) in ALLOWED:
                    allowed_seen.add((rel, call))
                    continue
                lineno = text.count("\n", 0, m.start()) + 1
                violations.append(f"{rel}:{lineno}: {lines[lineno - 1].strip()}")
    stale = sorted(set(ALLOWED) - allowed_seen)
    for rel, call in stale:
        print(f"scripts/check-timer-seam.py: ALLOWED lists {call}() in {rel}, which no longer calls it: remove the entry")
    if violations:
        print("timers armed outside the loop's timer seam (use evtimer_add_usec() or event_add_usec() from "
              "basic/timer.h, which honour the unit tests' virtual clock):")
        for v in violations:
            print("  " + v)
    if violations or stale:
        return 1
    print(f"every timer in src/ goes through the seam: {seam_calls} calls of evtimer_add_usec/event_add_usec in "
          f"{len(seam_files)} files; {len(ALLOWED)} libevent-internal timeouts allowed by name")
    return 0


if __name__ == "__main__":
    sys.exit(main())

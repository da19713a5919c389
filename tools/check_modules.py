#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`make check`: the module edges of tools/modules.txt hold in src/.

Every `#include "../<module>/..."` of a file in src/<module>/ must be an edge the table allows,
the allowed edges must form no cycle, every module of src/ must be in the table, each
third-party header listed there is included only by its owner, and no SQL outside
src/store/ledger.c writes an organization's credit balance. Prints TAP lines for
tools/check.sh (one per rule); exit 1 when one fails. Standard library only.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
TABLE = os.path.join(ROOT, "tools", "modules.txt")
# SQL that writes an organization's balance or its ledger: only src/store/ledger.c may hold it.
BALANCE = re.compile(r'UPDATE\s+orgs\s+SET\b[^"]*\b(test_)?credits\s*=|'
                     r'INSERT\s+INTO\s+credit_(transactions|usage)\b')
BALANCE_OWNER = "store/ledger.c"
LOCAL = re.compile(r'^\s*#\s*include\s+"\.\./([a-z_]+)/')
SYSTEM = re.compile(r'^\s*#\s*include\s+<([^>]+)>')


def read_table(path):
    """({module: set of modules or None for any}, [(header prefix, owner)])."""
    edges, owners = {}, []
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("<") else line.strip()
        if not line:
            continue
        if line.startswith("<"):
            header, owner = line.split()
            owners.append((header[1:], owner))
            continue
        name, _, deps = line.partition(":")
        deps = deps.split()
        edges[name.strip()] = None if deps == ["*"] else set(deps)
    return edges, owners


def sources():
    """(path relative to src/, module) of every .c and .h file."""
    for d, _, files in os.walk(SRC):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                rel = os.path.relpath(os.path.join(d, f), SRC)
                yield rel, ("main" if "/" not in rel else rel.split("/", 1)[0])


def find_cycle(edges):
    """A list of modules forming a cycle in the allowed edges, or None."""
    state = {}

    def visit(m, path):
        state[m] = 1
        for d in sorted(edges.get(m) or ()):
            if state.get(d) == 1:
                return path + [m, d]
            if d not in state:
                c = visit(d, path + [m])
                if c:
                    return c
        state[m] = 2
        return None

    for m in sorted(edges):
        if edges[m] is not None and m not in state:
            c = visit(m, [])
            if c:
                return c
    return None


def main():
    edges, owners = read_table(TABLE)
    bad_edges, bad_headers, bad_balance, unknown = [], [], [], set()
    for rel, mod in sources():
        if mod not in edges:
            unknown.add(mod)
            continue
        for n, line in enumerate(open(os.path.join(SRC, rel), encoding="utf-8"), 1):
            m = LOCAL.match(line)
            if m and m.group(1) != mod and edges[mod] is not None \
                    and m.group(1) not in edges[mod]:
                bad_edges.append("src/%s:%d: %s includes %s" % (rel, n, mod, m.group(1)))
            if BALANCE.search(line) and rel != BALANCE_OWNER:
                bad_balance.append("src/%s:%d: a balance written outside %s"
                                   % (rel, n, BALANCE_OWNER))
            m = SYSTEM.match(line)
            if m:
                for header, owner in owners:
                    if m.group(1).startswith(header) and not (
                            rel == owner or rel.startswith(owner + "/")):
                        bad_headers.append("src/%s:%d: <%s> belongs to %s"
                                           % (rel, n, m.group(1), owner))
    results = [
        ("every module of src/ is in tools/modules.txt",
         ["module %s" % u for u in sorted(unknown)]),
        ("includes follow the allowed module edges", bad_edges),
        ("the allowed module edges form no cycle",
         [" -> ".join(find_cycle(edges))] if find_cycle(edges) else []),
        ("each third-party header is included by its owner only", bad_headers),
        ("balances change only in src/%s" % BALANCE_OWNER, bad_balance),
    ]
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    failed = 0
    for name, problems in results:
        n += 1
        if problems:
            failed += 1
            print("not ok %d - %s" % (n, name))
            for p in problems:
                print("#   " + p)
        else:
            print("ok %d - %s" % (n, name))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

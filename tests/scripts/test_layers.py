#!/usr/bin/env python3
"""test_layers.py BUILD_DIR - no two source files of the library, the
program or the server call each other, directly or round a loop; nor do
two folders of the library (src/base, src/kern, ... src/api, src/live).

The house keeps its files and folders in layers: each calls only those
beneath it (docs/ARCHITECTURE.md). This reads the symbols of the build's
objects with nm (what each object defines, what it needs), joins every need
to the file that defines it, and fails naming each loop with the symbols
that close it. (cli/ and server/ are one program: cli/main.c runs serve,
which uses cli/common.c's helpers; between their files the rule holds.)
"""
import os
import subprocess
import sys


def objects(build):
    found = []
    for target in ("encdec_obj.dir", "encdec_kern.dir", "encdec_cli.dir"):
        root = os.path.join(build, "CMakeFiles", target)
        for dirpath, _, names in os.walk(root):
            for n in names:
                if n.endswith(".c.o"):
                    path = os.path.join(dirpath, n)
                    found.append((os.path.relpath(path, root)[:-2], path))
    return found


def symbols(paths, *flags):
    """{object path: its symbols} from one nm run over them all."""
    out = subprocess.run(["nm", "-A", *flags, *paths], capture_output=True, text=True,
                         check=True).stdout
    got = {p: set() for p in paths}
    for line in out.splitlines():
        where, _, rest = line.rpartition(".o:")
        if where and rest.split():
            got.setdefault(where + ".o", set()).add(rest.split()[-1])
    return got


def loops(edges):
    """Tarjan's strongly connected components of more than one file."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return comps


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    objs = objects(sys.argv[1])
    if len(objs) < 50:
        print("skip: the build's objects are not there (%d found)" % len(objs))
        return 77
    paths = [path for _, path in objs]
    defs, undef = symbols(paths, "-g", "--defined-only"), symbols(paths, "-u")
    defined, needs = {}, {}
    for src, path in objs:
        for s in defs.get(path, ()):
            defined[s] = src
        needs[src] = undef.get(path, set())
    edges, why = {}, {}
    for src, syms in needs.items():
        for s in syms:
            dst = defined.get(s)
            if dst and dst != src:
                edges.setdefault(src, set()).add(dst)
                why.setdefault((src, dst), []).append(s)
    found = report("files", edges, why)
    # the same between the library's folders
    fedges, fwhy = {}, {}
    for (a, b), syms in why.items():
        fa, fb = folder(a), folder(b)
        if fa and fb and fa != fb:
            fedges.setdefault(fa, set()).add(fb)
            fwhy.setdefault((fa, fb), []).extend("%s(%s)" % (s, b) for s in syms)
    ffound = report("folders", fedges, fwhy)
    print("%d files, %d calls between files, %d loops; %d folders of src/, %d loops" %
          (len(objs), sum(len(v) for v in edges.values()), len(found), len(fedges), len(ffound)))
    return 1 if found or ffound else 0


def folder(src):
    """src/kern/gemm.c -> src/kern; None outside src/."""
    parts = src.split("/")
    return "/".join(parts[:2]) if parts[0] == "src" and len(parts) > 2 else None


def report(what, edges, why):
    found = loops(edges)
    for comp in found:
        print("%s calling each other: %s" % (what, ", ".join(comp)))
        for a in comp:
            for b in comp:
                if (a, b) in why:
                    print("  %s -> %s: %s" % (a, b, " ".join(sorted(why[a, b])[:6])))
    return found


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Draw the file-level graphs of the C libraries and refuse circles.

    tools/layers.py BUILD_DIR [--dot] [--module core] ...

For each module (a static library of src/<module>), two graphs between its
source files:

  calls     A -> B when A's object file uses a global symbol that B's defines
            (read with `nm` from the objects the build made, so only what is
            really linked counts; static functions are inside one file);
  includes  A -> B when file A includes "B" of the same module (another
            module's header, "core/core.h", is a layer below).

A cycle in either graph is printed and makes the exit status 1.  Also
checked: every call between libraries points down their ranks (core, then base,
then common, then sim, server and agent, which never call each other, then
the allot command's two programs), so the core uses no other allot library;
the client program, allot, uses no code of the controller's or the agent's
libraries (allot-daemon runs them); only server/server.c includes
<microhttpd.h>.

Prints the edges of each graph with the number of symbols behind a call
edge, or Graphviz (--dot).  Used by a meson test (tests/meson.build) and by
hand when a room is split.
"""
import argparse
import functools
import os
import re
import subprocess
import sys

MODULES = ["core", "common", "sim", "server", "agent", "cli"]


def objects(build, module):
    """{file stem: object path} of src/<module>'s static libraries."""
    out = {}
    base = os.path.join(build, "src", module)
    if not os.path.isdir(base):
        return out
    for d in sorted(os.listdir(base)):
        if not d.endswith(".p"):
            continue  # a static library's (NAME.a.p) or a program's objects
        for f in sorted(os.listdir(os.path.join(base, d))):
            if f.endswith(".c.o"):
                out[f[:-4]] = os.path.join(base, d, f)
    return out


@functools.lru_cache(maxsize=None)
def symbols(obj):
    """(defined globals, undefined) of one object file."""
    text = subprocess.run(["nm", obj], check=True, capture_output=True,
                          text=True).stdout
    defined, used = set(), set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRCVWG":
            defined.add(parts[2])
    return defined, used


def code_symbols(obj):
    """The global functions an object file defines (a sanitizer's
    constructors are local)."""
    text = subprocess.run(["nm", obj], check=True, capture_output=True,
                          text=True).stdout
    return [p[2] for p in (line.split() for line in text.splitlines())
            if len(p) == 3 and p[1] == "T"]


# Libraries by rank: a call goes only to a lower rank.
RANKS = {"allotcore": 0, "allotbase": 1, "allotcommon": 2, "allotsim": 3,
         "allotserver": 3, "allotagent": 3}
TOP = 4  # the allot command and the CLI's parsers


def library_of(path):
    """The library an object belongs to ("allotcore"), or "allot"."""
    d = os.path.basename(os.path.dirname(path))
    name = d[:-len(".a.p")] if d.endswith(".a.p") else d[:-len(".p")]
    return name[len("lib"):] if name.startswith("lib") else name


def call_graph(objs):
    syms = {stem: symbols(path) for stem, path in objs.items()}
    owner = {}
    for stem, (defined, _) in syms.items():
        for s in defined:
            owner[s] = stem
    edges = {}
    for stem, (_, used) in syms.items():
        for s in used:
            o = owner.get(s)
            if o is not None and o != stem:
                edges.setdefault((stem, o), set()).add(s)
    return edges, syms


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def include_graph(src, module):
    d = os.path.join(src, module)
    files = {f for f in os.listdir(d) if f.endswith((".c", ".h"))}
    edges = set()
    for a in files:
        with open(os.path.join(d, a), encoding="utf-8") as fh:
            text = fh.read()
        for b in INCLUDE.findall(text):
            if b in files and b != a:
                edges.add((a, b))
    return edges, files


def cycles(nodes, edges):
    """Strongly connected components of more than one node (Tarjan)."""
    succ = {n: [] for n in nodes}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
        succ.setdefault(b, [])
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(succ):
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--src", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    ap.add_argument("--module", action="append",
                    help="modules to draw (default: all)")
    ap.add_argument("--dot", action="store_true")
    args = ap.parse_args()
    mods = args.module or MODULES
    bad = 0

    # Calls between libraries.
    owner = {}
    libsyms = {}
    for m in MODULES:
        for stem, path in objects(args.build, m).items():
            lib = library_of(path)
            defined, used = symbols(path)
            libsyms[(lib, f"{m}/{stem}")] = used
            for s in defined:
                owner[s] = (lib, f"{m}/{stem}")
    for (lib, name), used in sorted(libsyms.items()):
        rank = RANKS.get(lib, TOP)
        for s in sorted(used):
            o = owner.get(s)
            if o is None or o[0] == lib:
                continue
            if rank == TOP and RANKS.get(o[0], TOP) == TOP:
                continue  # allot and allot-daemon share src/cli's files
            if RANKS.get(o[0], TOP) >= rank:
                bad = 1
                print(f"UPWARD: {name} ({lib}) calls {s} of {o[1]} ({o[0]})")

    # The client, the allot program, loads no daemon's code: of the
    # controller's and the agent's libraries it uses only objects that
    # define data and no function (their option tables, for its help).
    paths = {name: path for m in MODULES
             for path in objects(args.build, m).values()
             for name in [f"{m}/{os.path.basename(path)[:-4]}"]}
    for (lib, name), used in sorted(libsyms.items()):
        if lib != "allot":
            continue
        for s in sorted(used):
            o = owner.get(s)
            if o is None or o[0] not in ("allotserver", "allotagent"):
                continue
            if code_symbols(paths[o[1]]):
                bad = 1
                print(f"CLIENT: {name} (allot) uses {s} of {o[1]} ({o[0]}),"
                      " which holds code; the daemons run in allot-daemon")

    for m in mods:
        objs = objects(args.build, m)
        if not objs:
            print(f"{m}: no objects under {args.build}/src/{m}",
                  file=sys.stderr)
            return 2
        cedges, syms = call_graph(objs)
        iedges, stems = include_graph(args.src, m)
        if args.dot:
            print(f"digraph {m}_calls {{")
            for (a, b), s in sorted(cedges.items()):
                print(f'  "{a}" -> "{b}" [label={len(s)}];')
            print("}")
            print(f"digraph {m}_includes {{")
            for a, b in sorted(iedges):
                print(f'  "{a}" -> "{b}";')
            print("}")
        else:
            print(f"== {m}: calls (file -> file it calls, symbols)")
            for (a, b), s in sorted(cedges.items()):
                print(f"  {a} -> {b} ({len(s)})")
            print(f"== {m}: includes")
            for a, b in sorted(iedges):
                print(f"  {a} -> {b}")
        for kind, nodes, edges in (("calls", objs.keys(), cedges.keys()),
                                   ("includes", stems, iedges)):
            for comp in cycles(nodes, edges):
                bad = 1
                print(f"CIRCLE in {m} {kind}: {' <-> '.join(comp)}")
                for a, b in sorted(edges):
                    if a in comp and b in comp:
                        why = ""
                        if kind == "calls":
                            why = " (" + ", ".join(sorted(cedges[(a, b)])[:6]) + ")"
                        print(f"    {a} -> {b}{why}")
    # Only server.c speaks HTTP to clients (libmicrohttpd).
    for m in MODULES:
        d = os.path.join(args.src, m)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                if re.search(r"#\s*include\s*<microhttpd\.h>", fh.read()):
                    if (m, f) != ("server", "server.c"):
                        bad = 1
                        print(f"MHD: {m}/{f} includes <microhttpd.h>;"
                              " only server/server.c may")
    if bad:
        print("layers: circles, upward arrows or daemon code in the client"
              " found", file=sys.stderr)
    else:
        print(f"layers: {', '.join(mods)}: no circles")
    return bad


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Usage: python3 .ci/file-circles.py [src]

File-level import graph of src/: an edge a -> b when file a names a path (`use` or inline
`crate::`/`super::`/`self::`) that resolves into file b. Prints the strongly connected components
of more than one file, leaving out edges between a module and its own descendants (a child
using its parent's items is how Rust modules are built)."""
import os, re, sys
from collections import defaultdict
SRC = sys.argv[1] if len(sys.argv) > 1 else "src"
files = {}
for root, _, fs in os.walk(SRC):
    for f in fs:
        if not f.endswith(".rs"): continue
        p = os.path.join(root, f)
        rel = os.path.relpath(p, SRC)[:-3].split(os.sep)
        if rel in (["lib"], ["main"]): mod = ()
        elif rel[-1] == "mod": mod = tuple(rel[:-1])
        else: mod = tuple(rel)
        files[mod] = p
def resolve(path):
    path = tuple(path)
    while path and path not in files: path = path[:-1]
    return path
def strip(s):
    s = re.sub(r"//[^\n]*", "", s)
    return re.sub(r'"(\\.|[^"\\])*"', '""', s)
edges = defaultdict(set)
for mod, p in files.items():
    src = strip(open(p).read())
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", src):
        body = re.sub(r"\s+", "", m.group(1))
        # expand one level of braces: a::{b, c::d} -> a::b, a::c::d (nested braces: prefix only)
        mm = re.match(r"^(.*?)::\{(.*)\}$", body)
        if mm:
            pre = mm.group(1)
            depth = 0; cur = ""; parts = []
            for ch in mm.group(2):
                if ch == "{": depth += 1
                if ch == "}": depth -= 1
                if ch == "," and depth == 0: parts.append(cur); cur = ""
                else: cur += ch
            parts.append(cur)
            paths += [pre + "::" + re.sub(r"::\{.*$", "", x) for x in parts if x]
        else: paths.append(body)
    paths += re.findall(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)", src)
    # a module imported by name (`use super::views;`), then used as `views::fleet::render`
    for path in list(paths):
        segs0 = path.split("::")
        if segs0[-1] in ("self", "*") or not re.match(r"^[a-z_][a-z0-9_]*$", segs0[-1]): continue
        alias = segs0[-1]
        for m in re.finditer(r"(?<![:\w])" + alias + r"((?:::[A-Za-z_][A-Za-z0-9_]*)+)", src):
            paths.append(path + m.group(1))
    for path in paths:
        segs = [x for x in path.split("::") if x and not x.startswith(("*", "{"))]
        segs = [re.sub(r"\bas\b.*", "", x) for x in segs]
        if not segs: continue
        if segs[0] == "crate": base = []; segs = segs[1:]
        elif segs[0] in ("super", "self"):
            base = list(mod)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super": base = base[:-1]
                segs = segs[1:]
        else: continue
        tgt = resolve(base + segs)
        if tgt != mod and tgt in files:
            if tgt[:len(mod)] == mod or mod[:len(tgt)] == tgt: continue
            edges[mod].add(tgt)
# Tarjan
index = {}; low = {}; stack = []; on = set(); sccs = []; i = [0]
sys.setrecursionlimit(10000)
def sc(v):
    index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(comp)
for v in list(files):
    if v not in index: sc(v)
name = lambda m: "/".join(m) or "lib"
for c in sccs:
    members = sorted(c)
    print("circle:", " ".join(name(m) for m in members))
    for a in members:
        for b in sorted(edges[a]):
            if b in c: print(f"    {name(a)} -> {name(b)}")
print(f"{len(sccs)} circles")

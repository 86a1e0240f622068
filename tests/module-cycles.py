#!/usr/bin/env python3
"""tests/module-cycles.py: fails if the module graph of a crate has a cycle (reads files only).

A module may use its ancestors' items (`super::X`), so edges are counted between siblings: a
path `crate::a::b::c` named in any file under `crate::a::x` is an edge `x -> b` among the
children of `a` (and likewise at the top level, `x -> a` for a file under `x`). Each level's
graph must be acyclic, which is what "layers" means here: the metrics module never needs the
server, the server never needs a transport. `use` lines and inline paths are both read; test
modules (`#[cfg(test)]` onwards) are skipped, since tests may reach anywhere.

Usage: tests/module-cycles.py [SRC_DIR ...]   (default: every crate's src under runtime/ and operator/)
"""
import glob
import os
import re
import sys
from collections import defaultdict

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE = re.compile(r"\buse\s+([^;]+);", re.S)


def modules(src):
    """Maps module path tuples to their file."""
    found = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, name), src)[:-3].split(os.sep)
            if rel in (["lib"], ["main"]):
                rel = []
            elif rel[-1] == "mod":
                rel = rel[:-1]
            found[tuple(rel)] = os.path.join(root, name)
    return found


def expand(tree):
    """`a::{b, c::{d}}` -> [a::b, a::c::d] (a small parser for use trees)."""
    tree = re.sub(r"\s+", "", tree)
    out, stack, prefix, token = [], [], "", ""
    for ch in tree + ",":
        if ch == "{":
            stack.append(prefix)
            prefix += token
            token = ""
        elif ch in ",}":
            if token:
                out.append(prefix + token)
            token = ""
            if ch == "}":
                prefix = stack.pop()
        else:
            token += ch
    return [p.split(" as ")[0].removesuffix("::*").removesuffix("::self") for p in out]


def paths(text):
    text = text.split("#[cfg(test)]")[0]
    text = re.sub(r"//[^\n]*", "", text)
    # String literals may say "use" (an error message) and would read as a `use` item.
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    found = []
    for m in USE.finditer(text):
        found += [p for p in expand(m.group(1)) if p.split("::")[0] in ("crate", "super", "self")]
    found += [m.group(0) for m in PATH.finditer(text)]
    return found


def absolute(path, here, is_dir_module):
    parts = path.split("::")
    base = list(here) if is_dir_module else list(here)
    # `super` in a file module `a/b.rs` (module a::b) means a; `self` means a::b.
    cur = list(here)
    while parts and parts[0] in ("super", "self", "crate"):
        head = parts.pop(0)
        if head == "crate":
            cur = []
        elif head == "super":
            cur = cur[:-1]
    return tuple(cur + parts)


def edges(src):
    mods = modules(src)
    graph = defaultdict(set)  # (parent) -> {(from_child, to_child)}
    for here, file in mods.items():
        with open(file, encoding="utf-8") as f:
            text = f.read()
        for path in paths(text):
            target = absolute(path, here, False)
            common = 0
            while common < min(len(here), len(target)) and here[common] == target[common]:
                common += 1
            if common >= len(here) or common >= len(target):
                continue  # an ancestor's item, or the module itself
            parent = here[:common]
            child_to = target[: common + 1]
            if child_to not in mods:
                continue  # an item defined in the parent file, not a module
            graph[parent].add((here[common], target[common]))
    return graph


def cycles(pairs):
    adj = defaultdict(set)
    for a, b in pairs:
        adj[a].add(b)
    found, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(adj[n]):
            if state.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(adj):
        if n not in state:
            visit(n)
    return found


def main():
    srcs = sys.argv[1:] or sorted(glob.glob("runtime/*/src")) + ["operator/src"]
    bad = 0
    for src in srcs:
        if not os.path.isdir(src):
            continue
        graph = edges(src)
        for parent, pairs in sorted(graph.items()):
            where = "::".join(("crate",) + parent)
            for cycle in cycles(pairs):
                bad += 1
                print(f"{src}: cycle under {where}: {' -> '.join(cycle)}")
        count = sum(len(p) for p in graph.values())
        print(f"{src}: {count} edges between sibling modules checked")
    if bad:
        print(f"{bad} module cycle(s)")
        return 1
    print("module graph: no cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())

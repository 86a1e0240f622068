#!/usr/bin/env python3
"""tests/field-map.py: fails if ARCHITECTURE.md's field map and the CRD's spec fields disagree.

The field map (the first table under `## Field map` in ARCHITECTURE.md) has one row per
top-level field of the MCPServer spec, named `spec.<field>` in its first column. This check
fails (exit 1, naming them) when a field of the committed CRD has no row, when a row names no
field of the CRD or names one twice, and when a path written in backticks in the table
(`runtime/...` or `operator/...`) does not exist. Standard library only: the CRD is read with a
small indentation-based reader for the one path it needs. Reads files only.

Usage: tests/field-map.py [ARCHITECTURE_MD [CRD_YAML]]
       (default: ARCHITECTURE.md and crds/mcpservers.kube-mcp.io.yaml; paths are checked from
       the repository root)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# From the first `openAPIV3Schema:` (versions[0]) down to the spec's properties.
SPEC_PATH = ["openAPIV3Schema", "properties", "spec", "properties"]
KEY = re.compile(r"^( *)([A-Za-z0-9_$-]+):\s*$")
TICKS = re.compile(r"`([^`]+)`")
REPO_PATH = re.compile(r"^(?:runtime|operator)/[A-Za-z0-9_./-]*")


def indent(line):
    return len(line) - len(line.lstrip(" "))


def children(lines, start, depth):
    """(line index, key) of the keys one level below a key at indentation `depth` whose block
    starts at `start` (`depth` -1: the top level)."""
    child = None
    for i in range(start, len(lines)):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if indent(line) <= depth:
            break
        if child is None:
            child = indent(line)
        match = KEY.match(line)
        if match and indent(line) == child:
            yield i, match.group(2)


def spec_fields(crd_file):
    """The keys under openAPIV3Schema.properties.spec.properties, in file order."""
    with open(crd_file, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    # openAPIV3Schema sits in a list item (versions[0]): take its first occurrence.
    first = next((i for i, line in enumerate(lines) if KEY.match(line) and
                  KEY.match(line).group(2) == SPEC_PATH[0]), None)
    if first is None:
        sys.exit(f"{crd_file}: no `{SPEC_PATH[0]}:`")
    start, depth = first + 1, indent(lines[first])
    for name in SPEC_PATH[1:]:
        found = next((i for i, key in children(lines, start, depth) if key == name), None)
        if found is None:
            sys.exit(f"{crd_file}: no `{name}:` on the path {'.'.join(SPEC_PATH)}")
        start, depth = found + 1, indent(lines[found])
    fields = [key for _, key in children(lines, start, depth)]
    if not fields:
        sys.exit(f"{crd_file}: no fields under {'.'.join(SPEC_PATH)}")
    return fields


def field_map(doc_file):
    """The field map's rows: (line number, first cell, whole row)."""
    with open(doc_file, encoding="utf-8") as f:
        lines = f.read().splitlines()
    rows, in_section = [], False
    for number, line in enumerate(lines, 1):
        if line.startswith("## "):
            if in_section:
                break
            in_section = line.strip().lower() == "## field map"
            continue
        if not in_section:
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "field" or set(cells[0]) <= set("-: "):
                continue  # header and separator
            rows.append((number, cells[0], line))
        elif rows:
            break  # the first table only
    if not rows:
        sys.exit(f"{doc_file}: no table under `## Field map`")
    return rows


def main():
    doc_file = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "ARCHITECTURE.md")
    crd_file = (
        sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "crds/mcpservers.kube-mcp.io.yaml")
    )
    fields = spec_fields(crd_file)
    rows = field_map(doc_file)
    problems, seen = [], {}
    for number, cell, line in rows:
        named = re.fullmatch(r"`spec\.([A-Za-z0-9_]+)`", cell)
        if not named:
            problems.append(f"line {number}: first cell {cell!r} is not `spec.<field>`")
            continue
        field = named.group(1)
        if field in seen:
            problems.append(f"line {number}: spec.{field} has a row already (line {seen[field]})")
        seen.setdefault(field, number)
        if field not in fields:
            problems.append(f"line {number}: spec.{field} is not a field of the CRD's spec")
        for text in TICKS.findall(line):
            path = REPO_PATH.match(text)
            if path and not os.path.exists(os.path.join(ROOT, path.group(0))):
                problems.append(f"line {number}: `{path.group(0)}` does not exist")
    for field in fields:
        if field not in seen:
            problems.append(f"spec.{field} (CRD) has no row in the field map")
    if problems:
        print(f"{os.path.relpath(doc_file)}: the field map disagrees with {os.path.relpath(crd_file)}:")
        for problem in problems:
            print(f"  {problem}")
        return 1
    print(f"field map: {len(fields)} spec fields, each with one row; every path exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())

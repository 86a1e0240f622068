#!/usr/bin/env python3
"""The Markdown table of bench/declaration-scale.sh, from the records it wrote to a directory.

Usage: bench/declaration-scale-report.py DIR

Per size: load (process start until /readyz, ms; and per tool, µs), in-process parse and compile
(median, ms), idle RSS (MiB; and KiB per tool over the one-tool declaration's), `tools/list`
page latency (p50/p99, ms) and a whole walk (p50, ms), and instructions of parsing and compiling
per tool (callgrind, over the one-tool declaration's). Then the reload comparison, and the goals
of issue 30 item 6 checked against the figures.
"""

import json
import pathlib
import sys


def read(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def number(path):
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def fmt(value, digits=1):
    if value is None:
        return "—"
    if isinstance(value, int) or digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def main():
    out = pathlib.Path(sys.argv[1])
    sizes = sorted(
        int(p.stem.split("-")[1]) for p in out.glob("serve-*.json") if p.stem != "serve-1"
    )
    base = read(out / "serve-1.json") or {}
    base_rss = base.get("rss_kib")
    base_instructions = number(out / "instructions-1.txt")
    lines = []
    machine = out / "machine.md"
    if machine.exists():
        lines += ["Machine and run:", "", machine.read_text().rstrip(), ""]
    lines += [
        "| tools | manifest MB | load ms | µs per tool | parse ms | compile ms "
        "| idle RSS MiB | KiB per tool | page p50 ms | page p99 ms | pages | whole list p50 ms "
        "| instructions per tool |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = {}
    for n in sizes:
        serve = read(out / f"serve-{n}.json") or {}
        comp = read(out / f"compile-{n}.json") or {}
        pages = read(out / f"pages-{n}.json") or {}
        instructions = number(out / f"instructions-{n}.txt")
        load_ms = serve.get("load_ms")
        rss = serve.get("rss_kib")
        per_tool_kib = (rss - base_rss) / (n - 1) if rss and base_rss and n > 1 else None
        per_tool_ins = (
            (instructions - base_instructions) / (n - 1)
            if instructions and base_instructions and n > 1
            else None
        )
        rows[n] = {"load_ms": load_ms, "compile_ms": comp.get("compile_ms"), "rss": rss}
        page = pages.get("page", {})
        walk = pages.get("walk", {})
        lines.append(
            "| "
            + " | ".join(
                [
                    fmt(n, 0),
                    fmt(comp.get("bytes", 0) / 1e6, 2) if comp else "—",
                    fmt(load_ms, 0),
                    fmt(load_ms * 1000 / n if load_ms else None, 0),
                    fmt(comp.get("parse_ms")),
                    fmt(comp.get("compile_ms")),
                    fmt(rss / 1024 if rss else None),
                    fmt(per_tool_kib),
                    fmt(page.get("p50_ms"), 2),
                    fmt(page.get("p99_ms"), 2),
                    fmt(pages.get("pages"), 0),
                    fmt(walk.get("p50_ms")),
                    fmt(per_tool_ins, 0),
                ]
            )
            + " |"
        )
    lines += [
        "",
        f"One-tool baseline: load {fmt(base.get('load_ms'), 0)} ms, idle RSS "
        f"{fmt(base_rss / 1024 if base_rss else None)} MiB"
        + (
            f", {fmt(base_instructions / 1e6)} M instructions (process start included)."
            if base_instructions
            else "."
        ),
    ]
    reloads = sorted(out.glob("reload-*.json"))
    for path in reloads:
        r = read(path)
        if not r:
            continue
        n = path.stem.split("-")[1]
        s, d = r["steady"], r["reloading"]
        lines += [
            "",
            f"Reload of {int(n):,} tools: `tools/call` at {fmt(r['rate'], 0)}/s over "
            f"{r['concurrency']} connections, the manifest rewritten every {r['every_s']:g} s "
            f"({r['rewrites']} rewrites, {r['reloads']} reloads):",
            "",
            "| | calls | errors | p50 ms | p99 ms | max ms | server CPU s | peak RSS MiB |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for label, phase in (("no reload", s), ("reloading", d)):
            lines.append(
                f"| {label} | {phase['requests']:,} | {phase['errors']} | {phase['p50_ms']:.2f} "
                f"| {phase['p99_ms']:.2f} | {phase['max_ms']:.2f} | {phase['server_cpu_s']:.1f} "
                f"| {phase['rss_peak_mib']:.1f} |"
            )
        lines.append(
            f"| ratio | | | {r['p50_ratio']:.2f}x | {r['p99_ratio']:.2f}x | {r['max_ratio']:.2f}x | | |"
        )
    if 1000 in rows and rows[1000]["compile_ms"] is not None:
        lines += [
            "",
            f"Goal: compile of 1,000 tools < 1 s in release: {fmt(rows[1000]['compile_ms'])} ms "
            f"in process, {fmt(rows[1000]['load_ms'], 0)} ms from process start to ready "
            f"({'met' if rows[1000]['load_ms'] < 1000 else 'missed'}).",
        ]
    sizes_seen = sorted(rows)
    for small, large in zip(sizes_seen, sizes_seen[1:]):
        a, b = rows[small], rows[large]
        if a["compile_ms"] and b["compile_ms"]:
            growth = (b["compile_ms"] / a["compile_ms"]) / (large / small)
            lines.append(
                f"Compile time from {small:,} to {large:,} tools: {growth:.2f} of linear "
                "(1.00 is exactly linear; below, fixed costs spread over more tools)."
            )
    print("\n".join(lines))


if __name__ == "__main__":
    main()

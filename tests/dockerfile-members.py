#!/usr/bin/env python3
"""tests/dockerfile-members.py: fails if the Dockerfile's dependency layer misses a workspace member.

The image builds dependencies once against stub sources, so every member's `Cargo.toml` must be
copied (`COPY <dir>/Cargo.toml <dir>/Cargo.toml`) and every lib and bin target given a stub
(`<dir>` named in the stub loops, whose stub paths are `src/lib.rs` and `src/main.rs`); otherwise
cargo cannot load the workspace and the image build fails, which nothing here can run (no
container engine). The members come from `cargo metadata`. Reads files only.

Usage: tests/dockerfile-members.py [DOCKERFILE]   (default: Dockerfile)
"""
import json
import os
import re
import subprocess
import sys


def members(root):
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--no-deps", "--format-version", "1", "--locked"],
            check=True, capture_output=True, text=True, cwd=root,
        ).stdout
    )
    out = {}
    for package in meta["packages"]:
        directory = os.path.relpath(os.path.dirname(package["manifest_path"]), root)
        kinds = set()
        for target in package["targets"]:
            rel = os.path.relpath(target["src_path"], os.path.join(root, directory))
            if "lib" in target["kind"] and rel == "src/lib.rs":
                kinds.add("lib")
            elif "bin" in target["kind"] and rel == "src/main.rs":
                kinds.add("bin")
        out[directory] = kinds
    return out


def stub_dirs(text, kind):
    """Directories named in the Dockerfile's `for <kind> in ...; do` stub loop."""
    found = re.search(rf"for {kind} in ([^;]+);", text)
    return set(found.group(1).split()) if found else set()


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "Dockerfile")
    text = open(path).read()
    copied = set(re.findall(r"^COPY (\S+)/Cargo\.toml \1/Cargo\.toml$", text, re.M))
    stubs = {"lib": stub_dirs(text, "lib"), "bin": stub_dirs(text, "bin")}
    problems = []
    found = members(root)
    for directory, kinds in sorted(found.items()):
        if directory not in copied:
            problems.append(f"{directory}: no `COPY {directory}/Cargo.toml {directory}/Cargo.toml`")
        for kind in sorted(kinds):
            if directory not in stubs[kind]:
                problems.append(f"{directory}: no {kind} stub (add it to the `for {kind} in` loop)")
    for directory in sorted(copied - set(found)):
        problems.append(f"{directory}: copied but not a workspace member")
    for problem in problems:
        print(f"Dockerfile: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"Dockerfile: the dependency layer covers all {len(found)} workspace members")
    return 0


if __name__ == "__main__":
    sys.exit(main())

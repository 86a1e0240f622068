"""`mcp-runtime import openapi` on large real-world descriptions: GitHub's REST API (OpenAPI
3.0, npm `@octokit/openapi`) and Kubernetes' API (Swagger 2.0, from the Go module
`k8s.io/kubernetes` the control plane is built from). Each must import without error, the
summary must account for every operation, and `mcp-runtime check` must accept the output, also
split by tag into objects a cluster stores. Time and peak memory of each import are printed.

Does process, network (npm registry, Go module proxy, once; cached under
~/.cache/kube-mcp-test/specs and the Go module cache) and file I/O.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
from harness import runtime_bin

CACHE = Path(os.environ.get("KUBE_MCP_TEST_CACHE", Path.home() / ".cache" / "kube-mcp-test"))
OCTOKIT_VERSION = "23.0.2"
K8S_VERSION = "v1.37.2"  # the control plane's (tests/control-plane.sh K8S_VERSION)
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
IMPORT_TIMEOUT_S = 600
# Manifest bytes of the full import (`--methods all`) of the pinned specs: before shared schemas
# (each tool carried its own `$defs` copy of every schema it used) and with them (`spec.schemas`,
# each schema written once). The output is deterministic; the slack leaves room for small
# importer changes while a return to per-tool copies fails.
MANIFEST_BYTES = {"github": (10_022_063, 4_248_122), "kubernetes": (39_938_941, 10_295_191)}
SLACK = 1.05


def github_spec() -> Path:
    target = CACHE / "specs" / f"octokit-openapi-{OCTOKIT_VERSION}" / "api.github.com.json"
    if target.is_file():
        return target
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    work = target.parent.with_suffix(".tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    subprocess.run(
        ["npm", "pack", f"@octokit/openapi@{OCTOKIT_VERSION}", "--silent"], cwd=work, check=True, timeout=300, capture_output=True
    )  # fmt: skip
    with tarfile.open(work / f"octokit-openapi-{OCTOKIT_VERSION}.tgz") as tar:
        member = tar.getmember("package/generated/api.github.com.json")
        source = tar.extractfile(member)
        assert source is not None
        (work / "api.github.com.json").write_bytes(source.read())
    (work / f"octokit-openapi-{OCTOKIT_VERSION}.tgz").unlink()
    shutil.rmtree(target.parent, ignore_errors=True)
    work.rename(target.parent)
    return target


def kubernetes_spec() -> Path:
    modcache = CACHE / "go" / "pkg" / "mod"
    target = modcache / f"k8s.io/kubernetes@{K8S_VERSION}" / "api" / "openapi-spec" / "swagger.json"
    if target.is_file():
        return target
    if shutil.which("go") is None:
        pytest.skip("go is not installed")
    env = {**os.environ, "GOPATH": str(CACHE / "go"), "GOMODCACHE": str(modcache), "GOFLAGS": "-modcacherw", "GOTOOLCHAIN": "local"}
    subprocess.run(["go", "mod", "download", f"k8s.io/kubernetes@{K8S_VERSION}"], env=env, check=True, timeout=600, capture_output=True)
    return target


def count_operations(spec: Path) -> int:
    paths = json.loads(spec.read_text())["paths"]
    return sum(1 for path, item in paths.items() if not path.startswith("x-") for method in item if method in METHODS)


def measured(args: list[str], out: Path) -> tuple[int, str, float, int]:
    """Runs the binary; exit code, stderr, seconds and its own peak resident memory in MiB."""
    started = time.monotonic()
    err = out.with_suffix(".stderr")
    with out.open("wb") as sink, err.open("wb") as errors:
        proc = subprocess.Popen(args, stdout=sink, stderr=errors)
    deadline = started + IMPORT_TIMEOUT_S
    while True:
        # wait4 reaps this very child and returns its own resource usage.
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{args[1:3]} ran longer than {IMPORT_TIMEOUT_S} s")
        time.sleep(0.1)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err.read_text(), time.monotonic() - started, usage.ru_maxrss // 1024


@pytest.mark.timeout(1500)
@pytest.mark.parametrize(
    ("which", "extra"),
    [
        ("github", ["--methods", "all"]),
        ("kubernetes", ["--methods", "all", "--base-url", "https://kubernetes.default.svc", "--secret", "BearerToken=kube-api/token"]),
    ],
)
def test_large_specs_import_and_compile(which, extra, tmp_path, capsys):
    spec = github_spec() if which == "github" else kubernetes_spec()
    out = tmp_path / f"{which}.yaml"
    code, stderr, seconds, peak_mib = measured([str(runtime_bin()), "import", "openapi", str(spec), *extra], out)
    assert code == 0, stderr
    line = stderr.strip().splitlines()[-1]
    m = re.match(r"(\d+) operations: (\d+) tools", line)
    assert m, line
    operations, tools = int(m.group(1)), int(m.group(2))
    skipped = sum(int(n) for n in re.findall(r"(\d+) skipped", line))
    assert operations == count_operations(spec), line
    assert tools + skipped == operations, line
    assert tools > operations * 0.6, line
    header = out.read_text()[:200_000]
    assert f"# {line}\n" in header
    check = subprocess.run([str(runtime_bin()), "check", "--json", str(out)], capture_output=True, timeout=IMPORT_TIMEOUT_S)
    assert check.returncode == 0, check.stdout[:2000]
    [verdict] = json.loads(check.stdout)
    assert verdict["ok"] and verdict["tools"] == tools
    before, after = MANIFEST_BYTES[which]
    size = out.stat().st_size
    assert size <= after * SLACK, f"{which}: {size} bytes, {after} expected ({before} without spec.schemas)"
    with capsys.disabled():
        print(
            f"\nimport {which}: {spec.stat().st_size / 1e6:.1f} MB spec -> {size / 1e6:.1f} MB manifest "
            f"({before / 1e6:.1f} MB without spec.schemas); "
            f"{line}; {seconds:.1f} s, peak RSS {peak_mib} MiB ({runtime_bin().parent.name} build)"
        )


@pytest.mark.timeout(900)
def test_a_reviewed_subset_of_a_large_spec_is_one_command(tmp_path, capsys):
    """GitHub's issues API, read-only by default: exactly the spec's GET operations tagged
    `issues`, every one a read-only tool, with only the shared schemas they reach."""
    spec = github_spec()
    paths = json.loads(spec.read_text())["paths"]
    wanted = sum(1 for item in paths.values() for method, op in item.items() if method == "get" and "issues" in op.get("tags", []))
    out = tmp_path / "issues.yaml"
    code, stderr, seconds, _ = measured([str(runtime_bin()), "import", "openapi", str(spec), "--include-tag", "issues"], out)
    assert code == 0, stderr
    line = stderr.strip().splitlines()[-1]
    m = re.match(r"(\d+) operations: (\d+) tools, (\d+) left out by filters, (\d+) of them writes", line)
    assert m, line
    tools = int(m.group(2))
    skipped = sum(int(n) for n in re.findall(r"(\d+) skipped", line))
    assert tools + skipped == wanted, line
    text = out.read_text()
    assert text.count("readOnlyHint: true") == tools
    check = subprocess.run([str(runtime_bin()), "check", "--json", str(out)], capture_output=True, timeout=IMPORT_TIMEOUT_S)
    assert check.returncode == 0, check.stdout[:2000]
    full_after = MANIFEST_BYTES["github"][1]
    assert out.stat().st_size < full_after / 10, out.stat().st_size
    with capsys.disabled():
        print(f"\nimport github --include-tag issues: {line}; {out.stat().st_size / 1e3:.0f} kB manifest; {seconds:.1f} s")


# Largest object written by `--split-by-tag`: etcd stores objects of up to about 1.5 MiB.
MAX_OBJECT_BYTES = 1_000_000


@pytest.mark.timeout(1500)
@pytest.mark.parametrize(
    ("which", "extra"),
    [
        ("github", ["--methods", "all"]),
        ("kubernetes", ["--methods", "all", "--base-url", "https://kubernetes.default.svc", "--secret", "BearerToken=kube-api/token"]),
    ],
)
def test_large_specs_split_by_tag_into_objects_a_cluster_stores(which, extra, tmp_path, capsys):
    """`--split-by-tag DIR`: a server and one MCPToolSet per tag, every file within the object
    size, the tools across the sets those of the whole import, and `check DIR` accepting the
    directory as `serve --manifest DIR` reads it."""
    spec = github_spec() if which == "github" else kubernetes_spec()
    whole = tmp_path / f"{which}.yaml"
    code, stderr, _, _ = measured([str(runtime_bin()), "import", "openapi", str(spec), *extra], whole)
    assert code == 0, stderr
    tools = int(re.match(r"\d+ operations: (\d+) tools", stderr.strip().splitlines()[-1]).group(1))
    out = tmp_path / "split"
    code, stderr, seconds, peak_mib = measured([str(runtime_bin()), "import", "openapi", str(spec), *extra, "--split-by-tag", str(out)], tmp_path / "stdout")
    assert code == 0, stderr
    assert (tmp_path / "stdout").read_text() == ""
    files = sorted(out.iterdir())
    sizes = {f.name: f.stat().st_size for f in files}
    largest = max(sizes, key=sizes.get)
    assert sizes[largest] <= MAX_OBJECT_BYTES, (largest, sizes[largest])
    assert "server.yaml" in sizes
    set_tools = [int(n) for n in re.findall(r"MCPToolSet \S+, (\d+) tools, \d+ bytes", stderr)]
    assert len(set_tools) == len(files) - 1, stderr[-2000:]
    assert max(set_tools) <= 256
    assert sum(set_tools) == tools
    check = subprocess.run([str(runtime_bin()), "check", "--json", str(out)], capture_output=True, timeout=IMPORT_TIMEOUT_S)
    assert check.returncode == 0, check.stdout[:2000]
    [verdict] = json.loads(check.stdout)
    assert verdict["ok"] and verdict["tools"] == tools
    # An existing, non-empty directory is refused: a set of an earlier import would stay behind.
    again = subprocess.run([str(runtime_bin()), "import", "openapi", str(spec), *extra, "--split-by-tag", str(out)], capture_output=True, timeout=IMPORT_TIMEOUT_S)  # fmt: skip
    assert again.returncode != 0 and b"is not empty" in again.stderr
    with capsys.disabled():
        print(
            f"\nimport {which} --split-by-tag: {len(files) - 1} sets + server.yaml, {tools} tools; largest {largest} "
            f"{sizes[largest]:,} bytes, total {sum(sizes.values()):,} bytes; {seconds:.1f} s, peak RSS {peak_mib} MiB"
        )

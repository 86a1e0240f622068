#!/usr/bin/env python3
"""bench/discovery-tokens.py: the tokens a client sees in `tools/list` for the Kubernetes and
GitHub imports, with `spec.discovery` in `full` and in `search` mode (issue 30, item 5), plus
one `search_tools` answer and one `describe_tools` answer in search mode.

Tokenizer: OpenAI's `o200k_base` BPE as packaged by `bpe-openai` (PyPI, which embeds the
vocabulary, so no download at run time; byte-for-byte compatible with tiktoken). What is counted
is the JSON of the `tools` array of every page, as a client would hand the definitions to a model
(counted entry by entry, plus one token per separator: the package refuses very long inputs).

Does process, file and network I/O: runs `mcp-runtime import openapi` on the specs the Python
tests cache (tests/python/test_openapi_large.py fetches them), serves each manifest on
127.0.0.1 and asks it over HTTP. Usage (a venv with `pip install bpe-openai`):
  bench/discovery-tokens.py [--bin target/debug/mcp-runtime] [--work DIR]
"""
import argparse, json, os, socket, subprocess, tempfile, time, urllib.request
from pathlib import Path

import bpe_openai

CACHE = Path(os.environ.get("KUBE_MCP_TEST_CACHE", Path.home() / ".cache" / "kube-mcp-test"))
SPECS = {
    "kubernetes": (
        CACHE / "go/pkg/mod/k8s.io/kubernetes@v1.37.2/api/openapi-spec/swagger.json",
        ["--base-url", "https://kubernetes.default.svc", "--secret", "BearerToken=kube-api/token"],
        "list pods in a namespace",
    ),
    "github": (
        CACHE / "specs/octokit-openapi-23.0.2/api.github.com.json",
        [],
        "create an issue comment",
    ),
}
MODERN = "2026-07-28"
MAX_PAGES = 1000  # a bound on paging: 1,200 tools in pages of 100 is 12


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rpc(url: str, method: str, params: dict, name: str | None = None) -> dict:
    params = dict(params, _meta={
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name:
        headers["Mcp-Name"] = name
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=60) as r:
        return json.loads(r.read())["result"]


def serve(binary: str, manifest: Path, secrets: Path):
    port, admin = free_port(), free_port()
    proc = subprocess.Popen([binary, "serve", "--manifest", str(manifest), "--listen", f"127.0.0.1:{port}",
                             "--admin-listen", f"127.0.0.1:{admin}", "--secrets-dir", str(secrets)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{admin}/readyz", timeout=1).status == 200:
                return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{manifest} did not become ready")


def listed(url: str) -> list:
    tools, cursor = [], None
    for _ in range(MAX_PAGES):
        page = rpc(url, "tools/list", {"cursor": cursor} if cursor else {})
        tools += page["tools"]
        cursor = page.get("nextCursor")
        if not cursor:
            return tools
    raise SystemExit("too many pages")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="target/debug/mcp-runtime")
    parser.add_argument("--work", default=tempfile.mkdtemp(prefix="discovery-tokens-"))
    args = parser.parse_args()
    work = Path(args.work)
    secrets = work / "secrets"
    (secrets / "kube-api").mkdir(parents=True, exist_ok=True)
    (secrets / "kube-api" / "token").write_text("unused")
    enc = bpe_openai.get_encoding("o200k_base")
    one = lambda value: len(enc.encode(json.dumps(value, separators=(",", ":"))))
    # The package refuses very long inputs, so a list is counted entry by entry (BPE merges never
    # cross the `},{` between entries in practice), plus a token per separator and the brackets.
    count = lambda value: sum(map(one, value)) + len(value) + 1 if isinstance(value, list) else one(value)
    print(f"tokenizer: o200k_base (bpe-openai {bpe_openai.__version__})")
    print("| API | mode | tools/list entries | bytes | tokens |")
    print("|---|---|---|---|---|")
    extras = []
    for api, (spec, flags, query) in SPECS.items():
        full = work / f"{api}.yaml"
        with full.open("w") as out:
            subprocess.run([args.bin, "import", "openapi", str(spec), "--methods", "all", *flags],
                           stdout=out, stderr=subprocess.DEVNULL, check=True)
        text = full.read_text()
        assert "\nspec:\n" in text and "\n  discovery:" not in text
        search = work / f"{api}-search.yaml"
        search.write_text(text.replace("\nspec:\n", "\nspec:\n  discovery: {mode: search}\n", 1))
        for mode, manifest in (("full", full), ("search", search)):
            proc, url = serve(args.bin, manifest, secrets)
            try:
                tools = listed(url)
                size = len(json.dumps(tools, separators=(",", ":")).encode())
                print(f"| {api} | {mode} | {len(tools)} | {size} | {count(tools)} |")
                if mode == "search":
                    found = rpc(url, "tools/call", {"name": "search_tools", "arguments": {"query": query}}, "search_tools")
                    best = found["structuredContent"]["tools"][0]["name"]
                    described = rpc(url, "tools/call", {"name": "describe_tools", "arguments": {"names": [best]}}, "describe_tools")
                    extras.append(f"{api}: search_tools {query!r} -> {best}: {count(found)} tokens; "
                                  f"describe_tools [{best}]: {count(described)} tokens")
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    for line in extras:
        print(line)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/hostile-bodies.py: peak memory of mcp-runtime under large anonymous POSTs (issue 15).

Starts the release binary on bench/manifest.yaml, sends N concurrent POSTs of a ~4 MiB body to
/mcp (kinds: `dense` = [0,0,0,...], `objects` = [{"k":"v"},...], `strings` =
["aaaaaaaaaaaaaa",...], `text` = one long string), and
prints the process's peak RSS (VmHWM) before and after. Usage:
  bench/hostile-bodies.py [--bin target/release/mcp-runtime] [--concurrent 3] [--kind dense]
"""
import argparse, concurrent.futures, json, os, socket, subprocess, time, urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def body(kind, size=4 * 1024 * 1024 - 4096):
    head = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"x","arguments":{"x":'
    tail = "}}}"
    room = size - len(head) - len(tail)
    if kind == "dense":
        inner = "[" + "0," * (room // 2 - 1) + "0]"
    elif kind == "objects":
        unit = '{"k":"v"},'
        inner = "[" + unit * (room // len(unit) - 1) + '{"k":"v"}]'
    elif kind == "strings":
        # About the densest body the runtime still parses: one value per 17 bytes.
        unit = '"aaaaaaaaaaaaaa",'
        inner = "[" + unit * (room // len(unit) - 1) + '"a"]'
    else:
        inner = json.dumps("x" * (room - 2))
    return (head + inner + tail).encode()


def post(port, data):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp", data=data, method="POST",
        headers={"content-type": "application/json", "accept": "application/json, text/event-stream",
                 "mcp-protocol-version": "2026-07-28"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/mcp-runtime")
    ap.add_argument("--concurrent", type=int, default=3)
    ap.add_argument("--kind", default="dense", choices=["dense", "objects", "strings", "text"])
    args = ap.parse_args()
    port, admin = free_port(), free_port()
    proc = subprocess.Popen([args.bin, "serve", "--manifest", "bench/manifest.yaml",
                             "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{admin}/readyz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        before = hwm_kib(proc.pid)
        data = body(args.kind)
        with concurrent.futures.ThreadPoolExecutor(args.concurrent) as pool:
            statuses = list(pool.map(lambda _: post(port, data), range(args.concurrent)))
        after = hwm_kib(proc.pid)
        print(json.dumps({"kind": args.kind, "body_bytes": len(data), "concurrent": args.concurrent,
                          "statuses": statuses, "peak_rss_mib_before": round(before / 1024, 1),
                          "peak_rss_mib_after": round(after / 1024, 1)}))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()

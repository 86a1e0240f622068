#!/usr/bin/env python3
"""bench/simulate-pods.py: plays the kubelet for the operator scale benchmark.

The test control plane has no kubelet, so pods stay Pending. This watches the pods of a namespace
(label app.kubernetes.io/managed-by=mcp-operator) and writes, for each new one, what a kubelet
would: phase Running, Ready, a pod IP. The IPs are loopback addresses nothing listens on
(127.<prefix>.x.y), so the operator's verifier gets an immediate "connection refused": the
servers are Ready and unverifiable, the state the benchmark measures. Status writes go out on a
few threads with one connection each; the watch restarts where it stopped.

Usage: simulate-pods.py NAMESPACE PREFIX   (PREFIX: second octet of the pod IPs, 16-250)
Needs KUBE_SERVER (https://127.0.0.1:PORT), KUBE_CA, KUBE_CERT, KUBE_KEY (files, from the
admin kubeconfig). Writes one line per 500 pods to stderr. I/O: HTTPS to the API server only.
"""

import http.client
import json
import os
import queue
import ssl
import sys
import threading
import time
import urllib.parse

THREADS = 8
SELECTOR = "app.kubernetes.io/managed-by=mcp-operator"


def context():
    ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
    ctx.load_cert_chain(os.environ["KUBE_CERT"], os.environ["KUBE_KEY"])
    return ctx


def connect():
    url = urllib.parse.urlparse(os.environ["KUBE_SERVER"])
    return http.client.HTTPSConnection(url.hostname, url.port, context=context(), timeout=60)


def status(ip):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
            ],
            "containerStatuses": [
                {
                    "name": "mcp-runtime",
                    "image": "ghcr.io/kube-mcp/kube-mcp:bench",
                    "imageID": "",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                }
            ],
        }
    }


def writer(namespace, work, done):
    conn = connect()
    while True:
        name, ip = work.get()
        body = json.dumps(status(ip))
        for attempt in range(5):
            try:
                conn.request(
                    "PATCH",
                    f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                    body,
                    {"Content-Type": "application/merge-patch+json"},
                )
                response = conn.getresponse()
                response.read()
                if response.status < 500:
                    break
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = connect()
            time.sleep(0.2 * (attempt + 1))
        done()


def main():
    namespace, prefix = sys.argv[1], int(sys.argv[2])
    work = queue.Queue()
    lock = threading.Lock()
    count = [0]

    def done():
        with lock:
            count[0] += 1
            if count[0] % 500 == 0:
                print(f"[pods] {count[0]} pods running", file=sys.stderr, flush=True)

    for _ in range(THREADS):
        threading.Thread(target=writer, args=(namespace, work, done), daemon=True).start()
    seen = set()
    version = ""
    while True:
        conn = connect()
        query = urllib.parse.urlencode(
            {"watch": "1", "labelSelector": SELECTOR, "resourceVersion": version, "allowWatchBookmarks": "true"}
        )
        try:
            conn.request("GET", f"/api/v1/namespaces/{namespace}/pods?{query}")
            response = conn.getresponse()
            if response.status != 200:
                response.read()
                version = ""
                time.sleep(1)
                continue
            for line in response:
                event = json.loads(line)
                pod = event["object"]
                meta = pod.get("metadata", {})
                version = meta.get("resourceVersion", version)
                if event["type"] == "ERROR":
                    version = ""
                    break
                if event["type"] != "ADDED" or meta.get("deletionTimestamp"):
                    continue
                name = meta["name"]
                if name in seen or pod.get("status", {}).get("podIP"):
                    continue
                n = len(seen)
                seen.add(name)
                work.put((name, f"127.{prefix}.{n // 250}.{n % 250 + 1}"))
        except (OSError, http.client.HTTPException, ValueError):
            time.sleep(1)
        finally:
            conn.close()


if __name__ == "__main__":
    main()

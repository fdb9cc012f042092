#!/usr/bin/env python3
"""Idle-connection flood of `kbuild hub serve` (docs/reliability.md, "Registry under abuse").

--idle connections from --addresses loopback addresses (127.0.2.x, fewer than max-connections-per-client
each) connect and send nothing, reconnecting whenever the server closes them, so that together they
hold more descriptors than the server has (it runs with a hard RLIMIT_NOFILE of --descriptors).
Meanwhile a normal client times `GET /api/whoami-v2` (every tenth request a commit), one connection
per request, and the script prints its latency percentiles and failures as JSON.

    python3 tests/load/idle_flood.py --kbuild .build/tool/kbuild --idle 1500 --descriptors 1024
"""

import argparse
import json
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slow_clients import percentile, prepare_commits, timed_requests  # noqa: E402


def start_limited_server(kbuild, root, descriptors):
    token = subprocess.run([kbuild, "hub", "token", "--root", root, "--user", "alice"], check=True,
                           capture_output=True, text=True).stdout.strip()

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    process = subprocess.Popen([kbuild, "hub", "serve", "--root", root, "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    line = process.stdout.readline()
    while line and not line.startswith("kbuild hub: serving "):
        line = process.stdout.readline()
    if not line:
        raise SystemExit("the server did not start: " + process.stderr.read())
    return process, line.strip().rsplit(" at ", 1)[1], token


class IdleFlood:
    """Keeps `count` connections open from `addresses` sources, reopening each the server closes."""

    def __init__(self, host, port, count, addresses):
        self.host, self.port, self.count, self.addresses = host, port, count, addresses
        self.stopped = threading.Event()
        self.opened = 0
        self.closed_by_server = 0
        self.refused = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def connect(self, selector, index):
        try:
            sock = socket.create_connection((self.host, self.port), timeout=5,
                                            source_address=(f"127.0.2.{1 + index % self.addresses}", 0))
        except OSError:
            self.refused += 1
            return
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, index)
        self.opened += 1

    def run(self):
        selector = selectors.DefaultSelector()
        for index in range(self.count):
            self.connect(selector, index)
        while not self.stopped.is_set():
            for key, _ in selector.select(timeout=0.2):
                try:
                    data = key.fileobj.recv(4096)
                except OSError:
                    data = b""
                if data:
                    continue  # an answer (429/503) before the close
                selector.unregister(key.fileobj)
                key.fileobj.close()
                self.closed_by_server += 1
                self.connect(selector, key.data)
        for key in list(selector.get_map().values()):
            key.fileobj.close()

    def start(self):
        self.thread.start()

    def stop(self):
        self.stopped.set()
        self.thread.join(timeout=30)


def measure(kbuild, idle, addresses, descriptors, requests, warmup=5.0, pause=0.05, timeout=15.0):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, idle + 512)), hard))
    with tempfile.TemporaryDirectory(prefix="kbuild-flood-") as root:
        process, url, token = start_limited_server(kbuild, root, descriptors)
        parsed = urllib.parse.urlsplit(url)
        host, port = parsed.hostname, parsed.port
        try:
            prepare_commits(host, port, token)
            flood = IdleFlood(host, port, idle, addresses)
            flood.start()
            time.sleep(warmup)
            started = time.perf_counter()
            latencies, failures = timed_requests(host, port, token, requests, "127.0.0.1", timeout, pause)
            elapsed = time.perf_counter() - started
            flood.stop()
        finally:
            process.terminate()
            process.wait(timeout=30)
    return {
        "idle": idle, "addresses": addresses, "descriptors": descriptors, "requests": requests,
        "ok": len(latencies), "failed": len(failures), "failures": sorted(set(failures)),
        "p50_ms": round(percentile(latencies, 0.50), 2), "p99_ms": round(percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2) if latencies else None, "elapsed_s": round(elapsed, 1),
        "idle_opened": flood.opened, "idle_closed_by_server": flood.closed_by_server, "idle_refused": flood.refused,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kbuild", required=True)
    parser.add_argument("--idle", type=int, default=1500)
    parser.add_argument("--addresses", type=int, default=100)
    parser.add_argument("--descriptors", type=int, default=1024, help="the server's hard RLIMIT_NOFILE")
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    result = measure(args.kbuild, args.idle, args.addresses, args.descriptors, args.requests)
    print(json.dumps(result))
    return 0 if result["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

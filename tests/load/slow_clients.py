#!/usr/bin/env python3
"""Slow-client load test of `kbuild hub serve` (docs/reliability.md, "Registry under abuse").

N "slow" clients open connections and trickle request headers (one header line every --interval
seconds, never finishing the request), reconnecting whenever the server drops them, as a slowloris
attacker would; with --mode body they send complete headers of an anonymous POST announcing a 16 MiB
body instead, and trickle the body (64 KiB every --interval seconds: above any per-read floor).
Meanwhile a normal client times `GET /api/whoami-v2` with a token, one new connection per request
(every tenth request a commit instead), and the script prints the normal client's latency percentiles.

The slow clients connect from --slow-source (default 127.0.0.2; several, comma-separated, are used in
turn) and the normal client from --normal-source (default 127.0.0.1): on Linux every 127.0.0.0/8
address reaches a server bound to 127.0.0.1, so they look like different hosts to it. The normal
client pauses --pause seconds before each request, so that 200 requests span about 20 s: several
rounds of the server cutting slow clients off and of them reconnecting.

Either give --kbuild (a fresh registry with a token is created in a temporary directory and served on
a free port) or --url and --token (an existing server). Standard library only.

    python3 tests/load/slow_clients.py --kbuild .build/tool/kbuild --slow 40 --requests 200
"""

import argparse
import base64
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse


def start_server(kbuild, root, limits=""):
    """A fresh registry in `root` with a token for alice (and `limits`, TOML lines of [limits])."""
    token = subprocess.run([kbuild, "hub", "token", "--root", root, "--user", "alice"], check=True,
                           capture_output=True, text=True).stdout.strip()
    if limits:
        with open(os.path.join(root, "config.toml"), "a") as config:
            config.write("\n[limits]\n" + limits + "\n")
    process = subprocess.Popen([kbuild, "hub", "serve", "--root", root, "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    while line and not line.startswith("kbuild hub: serving "):
        line = process.stdout.readline()
    if not line:
        raise SystemExit("the server did not start: " + process.stderr.read())
    return process, line.strip().rsplit(" at ", 1)[1], token


class SlowClients:
    """`count` threads, each keeping one trickling connection open until stop()."""

    def __init__(self, host, port, count, sources, interval, mode="headers"):
        self.host, self.port, self.sources, self.interval, self.mode = host, port, sources, interval, mode
        self.stopped = threading.Event()
        self.connects = 0
        self.dropped = 0  # connections the server closed (or refused) while they were trickling
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(count)]

    def start(self):
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.stopped.set()
        for thread in self.threads:
            thread.join(timeout=self.interval + 5)

    def run(self, index):
        while not self.stopped.is_set():
            try:
                sock = socket.create_connection((self.host, self.port), timeout=30,
                                                source_address=(self.sources[index % len(self.sources)], 0))
            except OSError:
                with self.lock:
                    self.dropped += 1
                self.stopped.wait(0.2)
                continue
            with self.lock:
                self.connects += 1
            try:
                if self.mode == "body":
                    sock.sendall(b"POST /api/models/alice/slow-target/paths-info/main HTTP/1.1\r\nHost: slow\r\n"
                                 b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 16777216\r\n\r\n")
                else:
                    sock.sendall(b"GET /api/whoami-v2 HTTP/1.1\r\nHost: slow\r\n")
                line = 0
                while not self.stopped.wait(self.interval):
                    line += 1
                    if self.mode == "body":
                        sock.sendall(b"paths=" + b"x" * (64 * 1024 - 6) if line == 1 else b"x" * 64 * 1024)
                    else:
                        sock.sendall(f"X-Slow-{index}-{line}: {'x' * 20}\r\n".encode())
                    # A server that gave up on us has closed the connection (or answered an error).
                    sock.setblocking(False)
                    try:
                        if sock.recv(4096) == b"":
                            raise ConnectionResetError
                        raise ConnectionResetError  # an answer: the server refused the request
                    except BlockingIOError:
                        pass
                    finally:
                        sock.setblocking(True)
            except OSError:
                with self.lock:
                    self.dropped += 1
            finally:
                sock.close()


def commit_request(number):
    """The path and body of a one-file commit to alice/slow-target (made by prepare_commits)."""
    lines = [{"key": "header", "value": {"summary": f"commit {number}", "description": ""}},
             {"key": "file", "value": {"path": "README.md", "encoding": "base64",
                                       "content": base64.b64encode(f"commit {number}\n".encode()).decode()}}]
    return "/api/models/alice/slow-target/commit/main", "".join(json.dumps(line) + "\n" for line in lines)


def prepare_commits(host, port, token, source="127.0.0.1"):
    connection = http.client.HTTPConnection(host, port, timeout=30, source_address=(source, 0))
    connection.request("POST", "/api/repos/create", body=json.dumps({"name": "slow-target"}),
                       headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    connection.close()
    if response.status not in (200, 409):
        raise SystemExit(f"cannot create alice/slow-target: HTTP {response.status}")


def timed_requests(host, port, token, count, source, timeout, pause):
    latencies, failures = [], []
    for number in range(count):
        time.sleep(pause)
        start = time.perf_counter()
        try:
            connection = http.client.HTTPConnection(host, port, timeout=timeout, source_address=(source, 0))
            headers = {"Authorization": f"Bearer {token}"}
            if number % 10 == 9:
                path, body = commit_request(number)
                connection.request("POST", path, body=body, headers=dict(headers, **{
                    "Content-Type": "application/x-ndjson"}))
            else:
                connection.request("GET", "/api/whoami-v2", headers=headers)
            response = connection.getresponse()
            body = response.read()
            connection.close()
            if response.status != 200:
                failures.append(f"HTTP {response.status}")
                continue
            json.loads(body)
            latencies.append((time.perf_counter() - start) * 1000)
        except (OSError, http.client.HTTPException) as error:
            failures.append(type(error).__name__)
    return latencies, failures


def percentile(values, fraction):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def measure(kbuild, slow, sources, interval, mode, requests, timeout=30.0, pause=0.1, warmup=3.0,
            normal_source="127.0.0.1", limits="", url=None, token=None):
    """Runs the slow clients against a fresh server (kbuild) or `url`, and the normal client; returns the
    figures as a dict."""
    process = None
    with tempfile.TemporaryDirectory(prefix="kbuild-slow-") as root:
        if kbuild:
            process, url, token = start_server(kbuild, root, limits)
        elif not (url and token):
            raise SystemExit("give --kbuild, or --url and --token")
        parsed = urllib.parse.urlsplit(url)
        host, port = parsed.hostname, parsed.port
        try:
            prepare_commits(host, port, token)
            clients = SlowClients(host, port, slow, sources, interval, mode)
            clients.start()
            time.sleep(warmup)
            started = time.perf_counter()
            latencies, failures = timed_requests(host, port, token, requests, normal_source, timeout, pause)
            elapsed = time.perf_counter() - started
            clients.stop()
        finally:
            if process:
                process.terminate()
                process.wait(timeout=30)
    return {
        "mode": mode,
        "slow_clients": slow,
        "slow_sources": len(sources),
        "requests": requests,
        "ok": len(latencies),
        "failed": len(failures),
        "failures": sorted(set(failures)),
        "p50_ms": round(percentile(latencies, 0.50), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2) if latencies else None,
        "elapsed_s": round(elapsed, 1),
        "slow_connects": clients.connects,
        "slow_dropped_by_server": clients.dropped,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kbuild", help="kbuild binary: start a fresh server")
    parser.add_argument("--url", help="an existing server (with --token)")
    parser.add_argument("--token")
    parser.add_argument("--slow", type=int, default=40, help="slow clients (default 40)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between header lines (default 2)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before the normal client starts")
    parser.add_argument("--requests", type=int, default=200, help="requests of the normal client (default 200)")
    parser.add_argument("--timeout", type=float, default=30.0, help="normal client's timeout per request (s)")
    parser.add_argument("--pause", type=float, default=0.1, help="seconds between normal requests (default 0.1)")
    parser.add_argument("--slow-source", default="127.0.0.2",
                        help="address(es) of the slow clients, comma-separated (default 127.0.0.2)")
    parser.add_argument("--normal-source", default="127.0.0.1")
    parser.add_argument("--mode", choices=("headers", "body"), default="headers",
                        help="trickle request headers (default), or a 16 MiB body after complete headers")
    args = parser.parse_args()

    result = measure(args.kbuild, args.slow, args.slow_source.split(","), args.interval, args.mode, args.requests,
                     args.timeout, args.pause, args.warmup, args.normal_source, url=args.url, token=args.token)
    print(json.dumps(result))
    return 0 if not result["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())

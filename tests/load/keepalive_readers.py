#!/usr/bin/env python3
"""Keep-alive readers and a publisher against `kbuild hub serve` (docs/reliability.md, "Connection
model").

--readers clients (default 1,000) each open one connection and read a public repository's info and a
file on it --rounds times, pausing up to --pause seconds between rounds with the connection kept
alive (reconnecting only when the server closed it, which is counted). The readers are spread over
--addresses loopback addresses (127.0.1.x), so that the per-client connection limit (16 by default)
is not what is measured. While they run, a publisher commits --commits times through the commit
endpoint with a token. The script prints latency percentiles of the reads and of the commits, and
the counts of errors, resets and reconnections. With --large N, the first N readers also download a
--large-mb MB file each round (on their kept-alive connection), so that the workers are busy with
large answers while the other readers' requests wait for one: every request must still be answered.

Either --kbuild (a fresh registry in a temporary directory, served on a free port) or --url and
--token (an existing server, with a repository the token may create). Standard library only, so the
e2e test (tests/e2e/test_hub_load.py) imports `measure` from here.

    python3 tests/load/keepalive_readers.py --kbuild .build/tool/kbuild --readers 1000
"""

import argparse
import asyncio
import base64
import json
import random
import statistics
import os
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slow_clients import start_server  # noqa: E402

REPO = "alice/keepalive"
FILE = "README.md"
LARGE_FILE = "large.bin"


async def read_response(reader):
    """(status, body) of one HTTP/1.1 response with Content-Length or chunked framing."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    if fields.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
            body += (await reader.readexactly(size + 2))[:-2]
        await reader.readuntil(b"\r\n")
        return status, body, fields
    return status, await reader.readexactly(int(fields.get("content-length", "0"))), fields


async def exchange(host, port, connection, message, source):
    """Sends `message` on `connection`; reconnects once when the server had closed it after an
    earlier answer (its keep-alive timeout), and raises when a new connection fails."""
    while True:
        reused = connection.get("writer") is not None
        if not reused:
            connection["reader"], connection["writer"] = await asyncio.open_connection(
                host, port, local_addr=(source, 0))
            connection["opened"] += 1
        try:
            connection["writer"].write(message)
            await connection["writer"].drain()
            return await read_response(connection["reader"])
        except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError):
            connection["writer"].close()
            connection["writer"] = None
            if not reused:
                raise


def get(host, path):
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


async def reader_task(host, port, index, rounds, pause, addresses, stats, large=False):
    source = f"127.0.1.{1 + index % addresses}"
    connection = {"writer": None, "opened": 0}
    paths = [f"/api/models/{REPO}", f"/{REPO}/resolve/main/{FILE}"]
    if large:
        paths.append(f"/{REPO}/resolve/main/{LARGE_FILE}")
    try:
        for _ in range(rounds):
            for path in paths:
                started = time.monotonic()
                status, body, _ = await exchange(host, port, connection, get(host, path), source)
                (stats["downloads"] if path.endswith(LARGE_FILE) else stats["reads"]).append(time.monotonic() - started)
                if status != 200:
                    stats["errors"].append(f"{path}: {status}")
                elif path.endswith(LARGE_FILE) and len(body) != stats["large_bytes"]:
                    stats["errors"].append(f"{path}: {len(body)} bytes of {stats['large_bytes']}")
            await asyncio.sleep(random.uniform(0, pause))
    except (OSError, asyncio.IncompleteReadError) as error:
        stats["errors"].append(f"reader {index}: {type(error).__name__}: {error}")
    finally:
        stats["reconnects"] += max(0, connection["opened"] - 1)
        if connection["writer"] is not None:
            connection["writer"].close()


async def commit(host, port, token, number, path=FILE, content=None):
    header = {"key": "header", "value": {"summary": f"publish {number}", "description": ""}}
    content = content if content is not None else f"release {number}\n".encode()
    file = {"key": "file", "value": {"path": path, "encoding": "base64", "content": base64.b64encode(content).decode()}}
    body = (json.dumps(header) + "\n" + json.dumps(file) + "\n").encode()
    message = (f"POST /api/models/{REPO}/commit/main HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
               f"Content-Type: application/x-ndjson\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
               ).encode() + body
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(message)
        await writer.drain()
        status, answer, _ = await read_response(reader)
        return status, answer
    finally:
        writer.close()


async def publisher(host, port, token, commits, spacing, stats):
    for number in range(1, commits + 1):
        await asyncio.sleep(spacing)
        started = time.monotonic()
        try:
            status, answer = await commit(host, port, token, number)
            if status != 200:
                stats["errors"].append(f"commit {number}: {status} {answer[:200]!r}")
        except (OSError, asyncio.IncompleteReadError) as error:
            stats["errors"].append(f"commit {number}: {type(error).__name__}: {error}")
        stats["commits"].append(time.monotonic() - started)


async def prepare(host, port, token, large_bytes=0):
    body = json.dumps({"name": REPO.split("/")[1]}).encode()
    reader, writer = await asyncio.open_connection(host, port)
    writer.write((f"POST /api/repos/create HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                  ).encode() + body)
    await writer.drain()
    status, answer, _ = await read_response(reader)
    writer.close()
    if status not in (200, 409):
        raise SystemExit(f"cannot create {REPO}: {status} {answer!r}")
    status, answer = await commit(host, port, token, 0)
    if status != 200:
        raise SystemExit(f"cannot commit to {REPO}: {status} {answer!r}")
    if large_bytes:
        status, answer = await commit(host, port, token, 0, LARGE_FILE, os.urandom(large_bytes))
        if status != 200:
            raise SystemExit(f"cannot commit {LARGE_FILE} to {REPO}: {status} {answer[:200]!r}")


async def run(url, token, readers, rounds, pause, addresses, commits, large=0, large_mb=50):
    parsed = urllib.parse.urlsplit(url)
    host, port = parsed.hostname, parsed.port
    large_bytes = large_mb * 1000 * 1000 if large else 0
    await prepare(host, port, token, large_bytes)
    stats = {"reads": [], "downloads": [], "commits": [], "errors": [], "reconnects": 0, "large_bytes": large_bytes}
    started = time.monotonic()
    tasks = [reader_task(host, port, i, rounds, pause, addresses, stats, i < large) for i in range(readers)]
    tasks.append(publisher(host, port, token, commits, pause * rounds / (commits + 1), stats))
    await asyncio.gather(*tasks)
    stats["wall"] = time.monotonic() - started
    return stats


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def measure(url, token, readers=1000, rounds=3, pause=3.0, addresses=100, commits=5, large=0, large_mb=50):
    """Runs the readers and the publisher; returns their figures (seconds)."""
    stats = asyncio.run(run(url, token, readers, rounds, pause, addresses, commits, large, large_mb))
    return {
        "reads": len(stats["reads"]),
        "downloads": len(stats["downloads"]),
        "download_max": max(stats["downloads"], default=float("nan")),
        "read_p50": percentile(stats["reads"], 0.50),
        "read_p99": percentile(stats["reads"], 0.99),
        "read_max": max(stats["reads"], default=float("nan")),
        "commits": len(stats["commits"]),
        "commit_max": max(stats["commits"], default=float("nan")),
        "commit_mean": statistics.mean(stats["commits"]) if stats["commits"] else float("nan"),
        "errors": stats["errors"],
        "reconnects": stats["reconnects"],
        "wall": stats["wall"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kbuild")
    parser.add_argument("--url")
    parser.add_argument("--token")
    parser.add_argument("--readers", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pause", type=float, default=3.0)
    parser.add_argument("--addresses", type=int, default=100)
    parser.add_argument("--commits", type=int, default=5)
    parser.add_argument("--large", type=int, default=0, help="readers that also download the large file")
    parser.add_argument("--large-mb", type=int, default=50)
    args = parser.parse_args()
    process = None
    with tempfile.TemporaryDirectory() as root:
        if args.kbuild:
            process, url, token = start_server(args.kbuild, root)
        elif args.url and args.token:
            url, token = args.url, args.token
        else:
            raise SystemExit("give --kbuild, or --url and --token")
        try:
            figures = measure(url, token, args.readers, args.rounds, args.pause, args.addresses, args.commits,
                              args.large, args.large_mb)
        finally:
            if process:
                process.terminate()
                process.wait(timeout=15)
    print(f"{args.readers} keep-alive readers x {args.rounds} rounds (pause <= {args.pause} s), "
          f"{args.commits} commits, wall {figures['wall']:.1f} s")
    print(f"reads:   {figures['reads']}  p50 {figures['read_p50'] * 1000:.0f} ms  p99 {figures['read_p99'] * 1000:.0f} ms"
          f"  max {figures['read_max'] * 1000:.0f} ms  reconnections {figures['reconnects']}")
    if args.large:
        print(f"large:   {figures['downloads']} downloads of {args.large_mb} MB, max {figures['download_max']:.1f} s")
    print(f"commits: {figures['commits']}  mean {figures['commit_mean'] * 1000:.0f} ms"
          f"  max {figures['commit_max'] * 1000:.0f} ms")
    print(f"errors:  {len(figures['errors'])}" + "".join(f"\n  {e}" for e in figures["errors"][:10]))


if __name__ == "__main__":
    main()

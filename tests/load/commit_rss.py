#!/usr/bin/env python3
"""Peak memory of `kbuild hub serve` while it takes one large NDJSON commit (docs/reliability.md).

Starts the server under `/usr/bin/time -v` on a fresh registry, creates a repo, POSTs one commit body
of --mb megabytes, stops the server and prints its "Maximum resident set size". --shape picks the
body: "one-file" (one base64 `file` line holding the whole body) or "many-files" (1 MiB lines) or "many-lfs" (short
`lfsFile` lines naming one uploaded object: one file per ~130 bytes).
With --mb 0 nothing is committed (the idle server's peak, for reference). Standard library only.

    python3 tests/load/commit_rss.py --kbuild .build/tool/kbuild --mb 100
"""

import argparse
import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


SMALL = b"\0small lfs object"
SMALL_OID = hashlib.sha256(SMALL).hexdigest()


def commit_body(megabytes, shape):
    header = json.dumps({"key": "header", "value": {"summary": "big", "description": ""}}).encode() + b"\n"
    target = megabytes * 1000 * 1000
    lines = [header]
    if shape == "one-file":
        raw = os.urandom(max(1, (target - 200) * 3 // 4))
        lines.append(json.dumps({"key": "file", "value": {"path": "big.bin", "encoding": "base64",
                                                           "content": base64.b64encode(raw).decode()}}).encode())
    elif shape == "many-lfs":
        size, index = 0, 0
        while size < target:
            line = json.dumps({"key": "lfsFile", "value": {"path": f"d{index // 1000}/f{index}.bin", "algo": "sha256",
                                                            "oid": SMALL_OID, "size": len(SMALL)}}).encode()
            lines.append(line + b"\n")
            size += len(line) + 1
            index += 1
    else:
        size, index = 0, 0
        while size < target:
            raw = os.urandom(768 * 1024)
            line = json.dumps({"key": "file", "value": {"path": f"f/{index}.bin", "encoding": "base64",
                                                         "content": base64.b64encode(raw).decode()}}).encode()
            lines.append(line + b"\n")
            size += len(line) + 1
            index += 1
    return b"".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kbuild", required=True)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--shape", choices=["one-file", "many-files", "many-lfs"], default="one-file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbuild-rss-") as root:
        (open(os.path.join(root, "config.toml"), "w")).write("[limits]\nmax-commit-body = 1073741824\n")
        token = subprocess.run([args.kbuild, "hub", "token", "--root", root, "--user", "alice"], check=True,
                               capture_output=True, text=True).stdout.strip()
        stats = os.path.join(root, "time.txt")
        server = subprocess.Popen(["/usr/bin/time", "-v", "-o", stats, args.kbuild, "hub", "serve", "--root", root,
                                   "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = server.stdout.readline()
        url = line.strip().rsplit(" at ", 1)[1]
        headers = {"Authorization": f"Bearer {token}"}

        def post(path, data, content_type="application/json"):
            request = urllib.request.Request(url + path, data=data, method="POST",
                                             headers={**headers, "Content-Type": content_type})
            with urllib.request.urlopen(request, timeout=600) as response:
                return response.status, response.read()

        post("/api/repos/create", json.dumps({"name": "big"}).encode())
        seconds = 0.0
        if args.shape == "many-lfs":  # every lfsFile line names one uploaded object
            batch = {"operation": "upload", "objects": [{"oid": SMALL_OID, "size": len(SMALL)}]}
            _, answer = post("/alice/big.git/info/lfs/objects/batch", json.dumps(batch).encode())
            href = json.loads(answer)["objects"][0]["actions"]["upload"]["href"]
            urllib.request.urlopen(urllib.request.Request(href, data=SMALL, method="PUT"), timeout=60).read()
        if args.mb > 0:
            body = commit_body(args.mb, args.shape)
            start = time.perf_counter()
            status, answer = post("/api/models/alice/big/commit/main", body, "application/x-ndjson")
            seconds = time.perf_counter() - start
            assert status == 200, answer
            body_bytes = len(body)
            del body
        else:
            body_bytes = 0
        # /usr/bin/time does not forward signals: stop the server itself, then time reports.
        children = open(f"/proc/{server.pid}/task/{server.pid}/children").read().split()
        for child in children:
            os.kill(int(child), signal.SIGTERM)
        server.wait(timeout=60)
        text = open(stats).read()
        peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    print(json.dumps({"body_bytes": body_bytes, "shape": args.shape, "peak_rss_mb": round(peak_kb / 1024, 1),
                      "ratio": round(peak_kb * 1024 / body_bytes, 2) if body_bytes else None,
                      "commit_seconds": round(seconds, 2)}))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""How much a one-file commit adds to the registry database (docs/reliability.md, "A commit's file
list is stored as trees").

Starts a fresh `kbuild hub serve`, commits --files files spread over 10 variant directories, stops the
server (its WAL is checkpointed on close) and measures ROOT/hub.sqlite*, then makes --commits commits
that each change one file, stops again and prints the growth per commit. Standard library only.

    python3 tests/load/tree_growth.py --kbuild .build/tool/kbuild
"""

import argparse
import base64
import json
import os
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slow_clients import start_server  # noqa: E402


def call(url, token, path, body, content_type):
    request = urllib.request.Request(url + path, data=body, method="POST",
                                     headers={"Authorization": "Bearer " + token, "Content-Type": content_type})
    return urllib.request.urlopen(request).read()


def commit(url, token, files, summary):
    lines = [json.dumps({"key": "header", "value": {"summary": summary, "description": ""}})]
    for path, content in files.items():
        lines.append(json.dumps({"key": "file", "value": {"path": path, "encoding": "base64",
                                                          "content": base64.b64encode(content).decode()}}))
    call(url, token, "/api/models/alice/big/commit/main", ("\n".join(lines) + "\n").encode(), "application/x-ndjson")


def database_bytes(root):
    return sum(os.path.getsize(os.path.join(root, name)) for name in os.listdir(root) if name.startswith("hub.sqlite"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kbuild", required=True)
    parser.add_argument("--files", type=int, default=1300)
    parser.add_argument("--commits", type=int, default=10)
    args = parser.parse_args()
    per_directory = args.files // 10
    with tempfile.TemporaryDirectory() as root:
        process, url, token = start_server(args.kbuild, root)
        call(url, token, "/api/repos/create", json.dumps({"name": "big"}).encode(), "application/json")
        files = {f"build/torch{v}-cxx11-cu130-x86_64-linux/img2gray/f{i:03}.py": f"{v} {i}\n".encode()
                 for v in range(10) for i in range(per_directory)}
        commit(url, token, files, f"{len(files)} files")
        process.terminate()
        process.wait(timeout=15)
        before = database_bytes(root)
        process, url, token = start_server(args.kbuild, root)
        for n in range(args.commits):
            commit(url, token, {"build/torch3-cxx11-cu130-x86_64-linux/img2gray/f007.py": f"change {n}\n".encode()},
                   f"one file {n}")
        process.terminate()
        process.wait(timeout=15)
        after = database_bytes(root)
    print(f"{len(files)}-file repo: hub.sqlite {before} bytes; after {args.commits} one-file commits {after} bytes: "
          f"{(after - before) / args.commits / 1024:.1f} KiB per commit")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Publish benchmark: `kbuild publish` vs huggingface_hub's `upload_folder`, same tree, same server.

    python benchmarks/publish_speed.py [--kbuild .build/tool/kbuild]

Builds kernels/img2gray (a git copy; both local variants), starts `kbuild hub serve` on loopback and
publishes the build twice with each tool: kbuild publish to a kernel repo (branch v1 + tag), and
upload_folder of build/ to a model repo (LFS, HF_HUB_DISABLE_XET=1), first into empty repos, then
again unchanged, each tool against its own server. Requests and LFS PUTs are counted from the
servers' access logs.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "hf_benchmark_token_0000000000"


def run(argv, env, cwd=None):
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {argv}\n{result.stdout}\n{result.stderr}")
    return time.perf_counter() - start, result.stdout


def log_lines(log: Path, start: int):
    with open(log) as f:
        f.seek(start)
        return f.readlines()


UPLOAD = r"""
import sys, time
from huggingface_hub import HfApi
api = HfApi()
api.create_repo(sys.argv[1], repo_type="model", exist_ok=True)
start = time.perf_counter()
api.upload_folder(folder_path=sys.argv[2], path_in_repo="build", repo_id=sys.argv[1], repo_type="model")
print(f"{time.perf_counter() - start:.3f}")
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kbuild", default=str(ROOT / ".build" / "tool" / "kbuild"))
    args = parser.parse_args()
    kbuild, python = args.kbuild, sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        kernel = tmp / "img2gray"
        shutil.copytree(ROOT / "kernels" / "img2gray", kernel, ignore=shutil.ignore_patterns("build", ".kbuild"))
        for git in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "k"]):
            subprocess.run(["git", *git], cwd=kernel, check=True)
        run([kbuild, "build", kernel, "--python", python, "-q"], os.environ)
        size = sum(p.stat().st_size for p in (kernel / "build").rglob("*") if p.is_file())
        # One server per tool, so that neither finds the other's LFS objects already stored.
        servers, envs, logs = [], [], []
        for name in ("hub-kbuild", "hub-hf"):
            hub_root = tmp / name
            hub_root.mkdir()
            (hub_root / "config.toml").write_text(f'[[tokens]]\ntoken = "{TOKEN}"\nuser = "bench"\nnamespaces = ["org"]\n')
            logs.append(hub_root / "access.log")
            server = subprocess.Popen([kbuild, "hub", "serve", "--root", str(hub_root), "--port", "0", "--log",
                                       str(logs[-1])], stdout=subprocess.PIPE, text=True)
            servers.append(server)
            url = re.search(r"at (http://\S+)", server.stdout.readline()).group(1)
            envs.append(dict(os.environ, HF_ENDPOINT=url, HF_TOKEN=TOKEN, HF_HOME=str(tmp / f"hf-{name}"),
                             HF_HUB_DISABLE_XET="1"))
        rows = []
        try:
            for label in ("first publish", "unchanged re-publish"):
                tag = "v1.0.0" if label == "first publish" else "v1.0.1"
                mark = logs[0].stat().st_size if logs[0].exists() else 0
                seconds, out = run([kbuild, "publish", kernel, "--tag", tag, "--repo-id", "org/img2gray", "--json"], envs[0])
                outcome = json.loads(out)
                lines = log_lines(logs[0], mark)
                rows.append((label, "kbuild publish (kernel repo)", seconds, None, len(lines),
                             sum(1 for line in lines if " PUT " in line)))
                mark = logs[1].stat().st_size if logs[1].exists() else 0
                seconds, out = run([python, "-c", UPLOAD, "org/img2gray-model", str(kernel / "build")], envs[1])
                lines = log_lines(logs[1], mark)
                rows.append((label, "huggingface_hub upload_folder (model repo)", seconds, float(out.strip()),
                             len(lines), sum(1 for line in lines if " PUT " in line)))
        finally:
            for server in servers:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=10)
    print(f"# publish benchmark  {time.strftime('%Y-%m-%d')}  kernels/img2gray build/ ({size / 1e6:.1f} MB, "
          f"2 variants)  kbuild hub serve on loopback")
    print("wall = the whole command (process start included); upload_folder = the call alone, in-process")
    print(f"{'run':22} {'tool':44} {'wall':>8} {'call':>8} {'requests':>9} {'LFS PUTs':>9}")
    for label, tool, seconds, call, requests, puts in rows:
        shown = f"{call:7.3f}s" if call is not None else f"{'-':>8}"
        print(f"{label:22} {tool:44} {seconds:7.3f}s {shown} {requests:9d} {puts:9d}")


if __name__ == "__main__":
    main()

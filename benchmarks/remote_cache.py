#!/usr/bin/env python3
"""Remote compile cache benchmark: the full matrix of kernels/img2gray built cold on one "machine",
then on a second one (another checkout, an empty local cache) from the warm shared cache server.

    python benchmarks/remote_cache.py [--kbuild .build/tool/kbuild] [--jobs N]

The cache server is nginx (Debian's nginx-light, WebDAV PUT), started on loopback by this script, as
in tests/e2e/test_scale.py. Toolchains must be fetched already (`kbuild toolchains fetch` or a
previous matrix build); they are shared by symlink, compiled objects are not. The peer is the same
build without a cache server (the first machine's time).
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_speed import fresh_kernel, timed  # noqa: E402

NGINX_CONF = """\
{user}
worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {root}/body;
  server {{
    listen 127.0.0.1:{port};
    location /kbuild/ {{ alias {root}/data/; dav_methods PUT; create_full_put_path on; client_max_body_size 2g; }}
  }}
}}
"""


def machine(tmp: Path, name: str, real_cache: Path):
    cache = tmp / name / "cache"
    cache.mkdir(parents=True)
    for shared in ("toolchains", "downloads"):
        if (real_cache / shared).is_dir():
            (cache / shared).symlink_to(real_cache / shared)
    return fresh_kernel(tmp / name), cache


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kbuild", default=str(ROOT / ".build" / "tool" / "kbuild"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        sys.exit("nginx is missing: scripts/bootstrap installs nginx-light")
    real_cache = Path(os.environ.get("KBUILD_CACHE", Path.home() / ".cache" / "kbuild"))
    print(f"# kbuild remote-cache benchmark  {time.strftime('%Y-%m-%d')}  {os.cpu_count()} CPUs  -j{args.jobs}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        server_root = tmp / "server"
        (server_root / "data").mkdir(parents=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        (server_root / "nginx.conf").write_text(NGINX_CONF.format(
            root=server_root, port=port, user="user root;" if os.geteuid() == 0 else ""))
        server = subprocess.Popen([nginx, "-p", str(server_root), "-e", str(server_root / "error.log"),
                                   "-c", str(server_root / "nginx.conf")], stderr=subprocess.PIPE)
        try:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            url = f"http://127.0.0.1:{port}/kbuild"
            results = []
            for name in ("machine-1", "machine-2"):
                kernel, cache = machine(tmp, name, real_cache)
                env = dict(os.environ, KBUILD_CACHE=str(cache), KBUILD_REMOTE_CACHE=url)
                elapsed, out = timed([args.kbuild, "build", kernel, "--matrix", "--locked", "--python", sys.executable,
                                      "-j", str(args.jobs)], env)
                summary = out.strip().splitlines()[-1]
                hits = re.search(r"remote hits\s+(\d+)",
                                 subprocess.run([args.kbuild, "cache", "stats"], env=env, capture_output=True,
                                                text=True).stdout)
                results.append((name, elapsed, summary, int(hits.group(1)) if hits else 0))
        finally:
            server.terminate()
            server.wait(timeout=20)
    (_, cold, cold_summary, _), (_, warm, warm_summary, warm_hits) = results
    print(f"{'measure':62} {'time':>9}")
    print(f"{'full matrix (6 variants), machine 1: cold, fills the server':62} {cold:8.1f}s   {cold_summary}")
    print(f"{'full matrix, machine 2: empty local cache, warm server':62} {warm:8.2f}s   {warm_summary}")
    print(f"{'ratio (machine 1 / machine 2)':62} {cold / warm:8.1f}x   ({warm_hits} remote hits)")


if __name__ == "__main__":
    main()

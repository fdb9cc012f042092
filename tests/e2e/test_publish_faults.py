"""Publish always recovers (issue 23): a proxy that mangles the ETag of one part of a multipart LFS upload
makes the first publish fail; the next run, without the proxy, must succeed (before: the mangled ETag was
saved in .kbuild/publish and reused by every rerun, which failed the same way forever)."""

import http.server
import os
import threading
import urllib.error
import urllib.request

import pytest

from conftest import PYTHON, build_args, copy_kernel, hub_server, run_kbuild

pytestmark = pytest.mark.slow

TOKEN = "hf_fault_test_token_0123456789abcdef"
ORG = "fault-org"


class ManglingProxy(http.server.ThreadingHTTPServer):
    """Forwards everything to `upstream`; the answer to the PUT of part 2 of a multipart upload gets a
    wrong ETag while `mangle` is set."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.upstream = ""
        self.mangle = True
        self.mangled = 0


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
        request = urllib.request.Request(self.server.upstream + self.path, data=body, method=self.command,
                                         headers=headers)
        try:
            answer = urllib.request.urlopen(request, timeout=60)
            status, answer_headers, payload = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as error:
            status, answer_headers, payload = error.code, error.headers, error.read()
        self.send_response(status)
        for name, value in answer_headers.items():
            if name.lower() in ("content-length", "connection", "transfer-encoding", "date", "server"):
                continue
            if (name.lower() == "etag" and self.command == "PUT" and self.path.split("?")[0].endswith("/2")
                    and self.server.mangle):
                value = '"' + "0" * 64 + '"'
                self.server.mangled += 1
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = forward

    def log_message(self, *args):
        pass


def test_a_mangled_part_etag_fails_once_then_the_next_publish_succeeds(tmp_path):
    proxy = ManglingProxy()
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    proxy_url = f"http://127.0.0.1:{proxy.server_port}"
    root = tmp_path / "hub"
    root.mkdir()
    (root / "config.toml").write_text("[limits]\nmultipart-chunk = 65536\n\n"
                                      f'[[tokens]]\ntoken = "{TOKEN}"\nuser = "alice"\nnamespaces = ["{ORG}"]\n')
    kernel = copy_kernel(tmp_path / "img2gray")
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    try:
        with hub_server(root, "--base-url", proxy_url) as direct_url:
            proxy.upstream = direct_url
            env = dict(os.environ, HF_ENDPOINT=proxy_url, HF_TOKEN=TOKEN, HF_HOME=str(tmp_path / "hf"))
            first = run_kbuild("publish", kernel, "--tag", "v1.0.0", "--repo-id", f"{ORG}/img2gray", env=env,
                               check=False)
            assert proxy.mangled >= 1, first.stdout + first.stderr
            assert first.returncode != 0, first.stdout
            assert "complete the upload" in first.stderr, first.stderr
            proxy.mangle = False  # the network is healthy again
            second = run_kbuild("publish", kernel, "--tag", "v1.0.0", "--repo-id", f"{ORG}/img2gray", env=env,
                                check=False)
            assert second.returncode == 0, second.stdout + second.stderr
            script = ("import sys\nfrom huggingface_hub import hf_hub_download\n"
                      "print(hf_hub_download(sys.argv[1], sys.argv[2], repo_type='kernel', revision='v1'))\n")
            library = next((kernel / "build" / "torch211-cxx11-cpu-x86_64-linux").glob("*.so"))
            assert library.stat().st_size > 2 * 65536  # three parts or more
            variant = f"build/torch211-cxx11-cpu-x86_64-linux/{library.name}"
            import subprocess
            direct = dict(env, HF_ENDPOINT=direct_url)  # the proxy's HEAD answers carry no length
            path = subprocess.run([PYTHON, "-c", script, f"{ORG}/img2gray", variant], env=direct, check=True,
                                  capture_output=True, text=True).stdout.strip()
            assert open(path, "rb").read() == library.read_bytes()
    finally:
        proxy.shutdown()

"""kbuild publish through a faulty network: a proxy between kbuild and `kbuild hub serve` answers a
share of requests with 500/502/503/429, drops connections before forwarding, and drops the answer
after forwarding (so the server did the work and the client does not know). Every publish must still
end with the tree of a fault-free publish, and two first publishes of one kernel at once converge."""

import http.client
import http.server
import json
import os
import random
import re
import shutil
import signal
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import KBUILD, PYTHON, run_kbuild

pytestmark = pytest.mark.slow

TOKEN = "hf_kbuild_faults_token_0123456789"
ORG = "kbuild-faults"


class FaultyProxy(http.server.ThreadingHTTPServer):
    """Forwards to `upstream`, injecting faults with a seeded generator. At most two faults in a row
    hit the same request (method and path), so every request gets through within the client's
    retries and the outcome is deterministic."""

    daemon_threads = True

    def __init__(self, seed: int):
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.upstream = None
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.streak = {}
        self.counts = {"forwarded": 0, "status": 0, "drop_before": 0, "drop_after": 0}

    def decide(self, key: str) -> str:
        with self.lock:
            if self.streak.get(key, 0) >= 2:
                self.streak[key] = 0
                return "forward"
            roll = self.random.random()
            fault = "status" if roll < 0.20 else "drop_before" if roll < 0.25 else "drop_after" if roll < 0.30 else ""
            self.streak[key] = self.streak.get(key, 0) + 1 if fault else 0
            self.counts[fault or "forwarded"] += 1
            return fault or "forward"


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = self.path.split("?")[0]
        decision = self.server.decide(f"{self.command} {path}")
        if decision == "drop_before":
            self.close_connection = True
            return
        if decision == "status":
            code = self.server.random.choice([500, 502, 503, 429])
            self.send_response(code)
            if code in (429, 503):
                self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        upstream = http.client.HTTPConnection(*self.server.upstream, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        upstream.request(self.command, self.path, body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        if decision == "drop_after":  # the server did it; the client never hears
            self.close_connection = True
            return
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_any


def start_server(root: Path, base_url: str):
    server = subprocess.Popen([str(KBUILD), "hub", "serve", "--root", str(root), "--port", "0", "--base-url", base_url],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    match = re.search(r"at http://127\.0\.0\.1:(\d+)", line)
    assert match, line + server.stderr.read()
    return server, int(match.group(1))


@pytest.fixture(scope="module")
def faulty_hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("faulty-hub")
    (root / "config.toml").write_text(
        "[limits]\nmultipart-chunk = 131072\n\n"
        f'[[tokens]]\ntoken = "{TOKEN}"\nuser = "alice"\nnamespaces = ["{ORG}"]\n')
    proxy = FaultyProxy(seed=20261203)
    proxy_url = f"http://127.0.0.1:{proxy.server_address[1]}"
    server, port = start_server(root, proxy_url)
    proxy.upstream = ("127.0.0.1", port)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    yield {"proxy": proxy_url, "direct": f"http://127.0.0.1:{port}", "proxy_server": proxy}
    proxy.shutdown()
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)


def env(url, home):
    e = dict(os.environ, HF_ENDPOINT=url, HF_TOKEN=TOKEN, HF_HOME=str(home), HF_HUB_DISABLE_XET="1")
    return e


def tree(direct_url, home, repo):
    script = ("import json, sys\nfrom huggingface_hub import HfApi\napi = HfApi()\n"
              "refs = api.list_repo_refs(sys.argv[1], repo_type='kernel')\n"
              "out = {'branches': sorted(b.name for b in refs.branches), 'tags': sorted(t.name for t in refs.tags)}\n"
              "for rev in ('main', 'v1'):\n"
              "    out[rev] = sorted((f.path, f.blob_id, f.lfs.sha256 if f.lfs else None) for f in "
              "api.list_repo_tree(sys.argv[1], revision=rev, repo_type='kernel', recursive=True) if hasattr(f, 'blob_id'))\n"
              "tag = [t for t in refs.tags if t.name == 'v1.0.0'][0].target_commit\n"
              "v1 = [b for b in refs.branches if b.name == 'v1'][0].target_commit\n"
              "out['tag_is_head'] = tag == v1\n"
              "print(json.dumps(out))\n")
    out = subprocess.run([PYTHON, "-c", script, repo], env=env(direct_url, home), check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def normalised(state, repo):
    # The card names the repository: compare it by path only.
    state = dict(state)
    state["main"] = [(p, None, None) if p == "README.md" else (p, b, l) for p, b, l in state["main"]]
    return state


@pytest.fixture(scope="module")
def big_kernel(built_kernel, tmp_path_factory):
    """A copy of the built kernel (its libraries are uploaded in 128 KiB multipart parts here)."""
    kernel = tmp_path_factory.mktemp("faults") / "img2gray"
    shutil.copytree(built_kernel, kernel, ignore=shutil.ignore_patterns(".kbuild"))
    return kernel


def test_twenty_publishes_through_faults_end_like_a_fault_free_one(faulty_hub, big_kernel, tmp_path):
    home = tmp_path / "home"
    reference = f"{ORG}/reference"
    run_kbuild("publish", big_kernel, "--tag", "v1.0.0", "--repo-id", reference, env=env(faulty_hub["direct"], home))
    expected = normalised(tree(faulty_hub["direct"], home, reference), reference)
    assert expected["tag_is_head"]

    def publish(i):
        repo = f"{ORG}/faulty-{i}"
        result = run_kbuild("publish", big_kernel, "--tag", "v1.0.0", "--repo-id", repo, "--json",
                            env=env(faulty_hub["proxy"], home), check=False)
        return repo, result

    with ThreadPoolExecutor(max_workers=5) as pool:
        results = list(pool.map(publish, range(20)))
    failures = [(repo, r.returncode, r.stderr[-2000:]) for repo, r in results if r.returncode != 0]
    assert not failures, failures
    for repo, result in results:
        assert normalised(tree(faulty_hub["direct"], home, repo), repo) == expected, repo
    counts = faulty_hub["proxy_server"].counts
    assert counts["status"] > 20 and counts["drop_before"] > 5 and counts["drop_after"] > 5, counts


def test_concurrent_first_publishes_of_one_kernel_converge(faulty_hub, big_kernel, tmp_path):
    home = tmp_path / "home"
    repo = f"{ORG}/raced"
    procs = [subprocess.Popen([str(KBUILD), "publish", str(big_kernel), "--tag", "v1.0.0", "--repo-id", repo],
                              env=env(faulty_hub["direct"], home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    state = tree(faulty_hub["direct"], home, repo)
    assert state["tag_is_head"] and state["branches"] == ["main", "v1"]
    # And publishing it once more is a no-op, even though the tag exists.
    again = run_kbuild("publish", big_kernel, "--tag", "v1.0.0", "--repo-id", repo, "--json",
                       env=env(faulty_hub["direct"], home))
    assert json.loads(again.stdout)["status"] == "no_changes"

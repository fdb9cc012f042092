"""Publishers at once (issue 42): every exit 0 is a release that is there, and every tag resolves to a
tree with every file of the build it was published for.

Three builds of img2gray's CPU variant (ops ids `srcA`, `srcB`, `srcC` by --unique-id) are published
by several `kbuild publish` processes at once to one `kbuild hub serve`, and once with one publisher's
tree listing delayed by a proxy while another commits: the case that tagged a commit without the build
when publish planned against the branch's name instead of the commit it had read."""

import http.server
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import KBUILD, build_args, copy_kernel, hub_server, run_kbuild

pytestmark = pytest.mark.slow

TOKEN = "hf_race_test_token_0123456789abcdef"
ORG = "race-org"
VARIANT = "torch211-cxx11-cpu-x86_64-linux"


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """{name: kernel directory} of three builds of one kernel version with distinct ops ids."""
    root = tmp_path_factory.mktemp("race-builds")
    kernels = {}
    for name in ("A", "B", "C"):
        kernel = copy_kernel(root / name)
        run_kbuild(*build_args(kernel, "--backend", "cpu", "--unique-id", f"src{name}"))
        kernels[name] = kernel
    return kernels


@pytest.fixture()
def hub(tmp_path):
    root = tmp_path / "hub"
    root.mkdir()
    (root / "config.toml").write_text(f'[[tokens]]\ntoken = "{TOKEN}"\nuser = "alice"\nnamespaces = ["{ORG}"]\n')
    with hub_server(root, "--log", root / "access.log") as url:
        yield url


def environment(url, tmp_path):
    return dict(os.environ, HF_ENDPOINT=url, HF_TOKEN=TOKEN, HF_HOME=str(tmp_path / "hf"))


def start_publish(kernel, repo, url, tmp_path, *args):
    return subprocess.Popen([str(KBUILD), "publish", str(kernel), "--repo-id", repo, "-q", *args],
                            env=environment(url, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def json_of(url, path):
    import json
    request = urllib.request.Request(url + path, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def build_at(url, repo, revision):
    """The ops id of the variant in the tree of `revision`, from the name of its library."""
    tree = json_of(url, f"/api/kernels/{repo}/tree/{revision}/build/{VARIANT}")
    libraries = [entry["path"] for entry in tree if entry["path"].endswith(".abi3.so")]
    assert len(libraries) == 1, tree
    return libraries[0].rsplit("_", 1)[1].removesuffix(".abi3.so")


def tags(url, repo):
    return {tag["name"]: tag["targetCommit"] for tag in json_of(url, f"/api/kernels/{repo}/refs")["tags"]}


class DelayingProxy(http.server.ThreadingHTTPServer):
    """Forwards to `upstream`; the first GET of a tree listing of the version branch's files waits
    `delay` seconds first (another publisher commits meanwhile)."""

    def __init__(self, delay):
        super().__init__(("127.0.0.1", 0), DelayingHandler)
        self.upstream = ""
        self.delay = delay
        self.delayed = 0


class DelayingHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        if self.command == "GET" and "/tree/" in self.path and "/tree/main" not in self.path and not self.server.delayed:
            self.server.delayed += 1
            time.sleep(self.server.delay)
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
            if name.lower() not in ("content-length", "connection", "transfer-encoding", "date", "server"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = forward

    def log_message(self, *args):
        pass


def test_a_publisher_whose_tree_listing_is_delayed_tags_a_commit_with_its_build(builds, hub, tmp_path):
    repo = f"{ORG}/delayed"
    # Branch v1 holds build B; two publishers of build A start, one of them with the tag and a slow
    # tree listing.
    run_kbuild("publish", builds["B"], "--repo-id", repo, env=environment(hub, tmp_path))
    proxy = DelayingProxy(delay=4)
    proxy.upstream = hub
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        tagged = start_publish(builds["A"], repo, f"http://127.0.0.1:{proxy.server_port}", tmp_path, "--tag", "v1.0.0")
        time.sleep(1)
        untagged = start_publish(builds["A"], repo, hub, tmp_path)
        assert untagged.wait(timeout=120) == 0, untagged.stderr.read()
        out, err = tagged.communicate(timeout=120)
    finally:
        proxy.shutdown()
    assert proxy.delayed == 1
    assert tagged.returncode == 0, out + err
    # Before: the delayed plan found A's files already on the branch, "no changes", and the tag went
    # on the commit it had read first, which holds build B.
    assert build_at(hub, repo, "v1.0.0") == "srcA"


@pytest.mark.parametrize("round_number", [1, 2])
def test_concurrent_publishers_of_three_builds_each_tag_their_own_build(builds, hub, tmp_path, round_number):
    repo = f"{ORG}/concurrent-{round_number}"
    plan = [("A", "v1.0.0")] * 3 + [("B", "v1.0.1")] * 2 + [("C", "v1.0.2")] + [("A", None)]
    started = time.monotonic()
    processes = [(build, tag, start_publish(builds[build], repo, hub, tmp_path, *(["--tag", tag] if tag else [])))
                 for build, tag in plan]
    outcomes = [(build, tag, process.wait(timeout=300), process.stderr.read()) for build, tag, process in processes]
    log = (tmp_path / "hub" / "access.log").read_text()
    lost = sum(1 for line in log.splitlines() if "/commit/" in line and " 412 " in line)
    print(f"\nround {round_number}: {len(plan)} publishers in {time.monotonic() - started:.1f} s, "
          f"{lost} commits met a moved branch and were planned again")
    for build, tag, code, err in outcomes:
        assert code == 0, (build, tag, err)  # every one of them: a release that is there
    released = tags(hub, repo)
    assert set(released) == {"v1.0.0", "v1.0.1", "v1.0.2"}, released
    for tag, build in (("v1.0.0", "A"), ("v1.0.1", "B"), ("v1.0.2", "C")):
        assert build_at(hub, repo, tag) == f"src{build}", tag

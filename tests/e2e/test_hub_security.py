"""kbuild hub serve under attack and at its edges, on loopback: content reachable only through a repo
that received or references it, upload URLs checked by token first, slow or lying clients cut off,
connection and header limits, exclusive port and root, temporary files swept at start, resumable
multipart uploads, and pull requests through the real huggingface_hub client.

Client code runs in subprocesses because huggingface_hub reads HF_ENDPOINT when it is imported."""

import base64
import hashlib
import json
import os
import socket
import subprocess
import textwrap
import time
import urllib.parse

import pytest

from conftest import KBUILD, PYTHON

pytestmark = pytest.mark.slow

CHUNK = 256 * 1024
READ_TIMEOUT = 2
PER_CLIENT = 4


class Server:
    def __init__(self, root, url, process, tokens):
        self.root, self.url, self.process, self.tokens = root, url, process, tokens
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname, parsed.port


def add_token(root, user):
    result = subprocess.run([str(KBUILD), "hub", "token", "--root", str(root), "--user", user], capture_output=True,
                            text=True, check=True)
    return result.stdout.strip()


def start(root, *extra):
    process = subprocess.Popen([str(KBUILD), "hub", "serve", "--root", str(root), *extra], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    assert line.startswith("kbuild hub: serving "), line + process.stderr.read()
    return process, line.strip().rsplit(" at ", 1)[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server with small limits: 2 s to send a request, 4 connections per client, 20 headers."""
    root = tmp_path_factory.mktemp("hubsec")
    (root / "config.toml").write_text(textwrap.dedent(f"""\
        [limits]
        multipart-chunk = {CHUNK}
        read-timeout-seconds = {READ_TIMEOUT}
        max-connections-per-client = {PER_CLIENT}
        max-header-count = 20
        max-header-bytes = 16384
        """))
    tokens = {user: add_token(root, user) for user in ("alice", "bob")}
    process, url = start(root, "--port", "0")
    yield Server(root, url, process, tokens)
    process.terminate()
    assert process.wait(timeout=15) == 0


def raw(server, data, source="127.0.0.1", wait=5.0):
    """Sends `data` on a new connection and returns everything the server answers before closing."""
    with socket.create_connection((server.host, server.port), timeout=wait, source_address=(source, 0)) as sock:
        sock.sendall(data)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except (TimeoutError, ConnectionResetError):
            pass
        return b"".join(chunks)


def request(server, method, path, body=None, token=None, content_type="application/json", source="127.0.0.1"):
    """One HTTP/1.1 request with Connection: close; returns (status, headers, body)."""
    headers = [f"{method} {path} HTTP/1.1", f"Host: {server.host}", "Connection: close"]
    if token:
        headers.append(f"Authorization: Bearer {token}")
    if body is not None:
        headers += [f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    answer = raw(server, ("\r\n".join(headers) + "\r\n\r\n").encode() + (body or b""), source)
    head, _, payload = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, fields, payload


def api(server, method, path, value, token):
    return request(server, method, path, json.dumps(value).encode(), token)


def ndjson(*lines):
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def header(summary="s", parent=None):
    value = {"summary": summary, "description": ""}
    if parent:
        value["parentCommit"] = parent
    return {"key": "header", "value": value}


def run_client(server, tmp_path, code, token):
    script = tmp_path / "client.py"
    script.write_text("import json, os, huggingface_hub as hh\napi = hh.HfApi()\n" + textwrap.dedent(code))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(HF_ENDPOINT=server.url, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_XET="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1", HF_TOKEN=token)
    result = subprocess.run([PYTHON, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"client failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


# ---------------------------------------------------------------------------------------------
# Content access


def test_another_repositorys_object_cannot_be_claimed(server, tmp_path):
    alice, bob = server.tokens["alice"], server.tokens["bob"]
    secret = b"\0" + os.urandom(5000)
    oid = hashlib.sha256(secret).hexdigest()
    run_client(server, tmp_path, f"""
        api.create_repo("alice/secret", private=True)
        api.upload_file(path_or_fileobj={secret!r}, path_in_repo="w.bin", repo_id="alice/secret")
        """, alice)
    assert api(server, "POST", "/api/repos/create", {"name": "m"}, bob)[0] == 200
    unknown = "c" * 64

    batch = lambda o: json.loads(api(server, "POST", "/bob/m.git/info/lfs/objects/batch",  # noqa: E731
                                     {"operation": "upload", "objects": [{"oid": o, "size": len(secret)}]}, bob)[2])
    claimed, never = batch(oid)["objects"][0], batch(unknown)["objects"][0]
    assert "actions" in claimed and "actions" in never and claimed.keys() == never.keys()
    verify = lambda o: api(server, "POST", "/bob/m.git/info/lfs/objects/verify",  # noqa: E731
                           {"oid": o, "size": len(secret)}, bob)
    (s1, _, b1), (s2, _, b2) = verify(oid), verify(unknown)
    assert s1 == s2 == 404 and b1.replace(oid.encode(), b"X") == b2.replace(unknown.encode(), b"X")
    commit = lambda o: request(server, "POST", "/api/models/bob/m/commit/main", ndjson(  # noqa: E731
        header(), {"key": "lfsFile", "value": {"path": "w.bin", "algo": "sha256", "oid": o}}), bob, "application/x-ndjson")
    (s1, _, b1), (s2, _, b2) = commit(oid), commit(unknown)
    assert s1 == s2 == 400 and b1.replace(oid.encode(), b"X") == b2.replace(unknown.encode(), b"X")

    # Bob can still commit the same bytes: his client sends them (the server checks their hash).
    out = run_client(server, tmp_path, f"""
        from pathlib import Path
        api.upload_file(path_or_fileobj={secret!r}, path_in_repo="w.bin", repo_id="bob/m")
        print(Path(hh.hf_hub_download("bob/m", "w.bin")).read_bytes().hex())
        """, bob)
    assert bytes.fromhex(out.strip().splitlines()[-1]) == secret


def test_upload_urls_fail_alike_without_their_token(server):
    alice = server.tokens["alice"]
    assert api(server, "POST", "/api/repos/create", {"name": "tokens"}, alice)[0] == 200
    content = b"\0stored object"
    oid = hashlib.sha256(content).hexdigest()
    answer = json.loads(api(server, "POST", "/alice/tokens.git/info/lfs/objects/batch",
                            {"operation": "upload", "objects": [{"oid": oid, "size": len(content)}]}, alice)[2])
    href = answer["objects"][0]["actions"]["upload"]["href"]
    assert request(server, "PUT", urllib.parse.urlsplit(href)._replace(scheme="", netloc="").geturl(), content,
                   content_type="application/octet-stream")[0] == 200
    for suffix, method in (("", "PUT"), ("/1", "PUT"), ("", "POST")):
        for query in ("?token=forged", ""):
            existing = request(server, method, f"/lfs/upload/{oid}{suffix}{query}", content)
            missing = request(server, method, f"/lfs/upload/{'d' * 64}{suffix}{query}", content)
            assert existing[0] == missing[0] == 404, (suffix, query, existing)
            assert existing[2] == missing[2]
            assert existing[1]["x-error-message"] == missing[1]["x-error-message"]


def test_no_body_is_read_before_the_request_is_authorised(server):
    alice, bob = server.tokens["alice"], server.tokens["bob"]
    assert api(server, "POST", "/api/repos/create", {"name": "authfirst"}, alice)[0] == 200
    cases = [  # headers announcing a huge body, then only its first bytes
        (b"PUT /lfs/upload/" + b"e" * 64 + b"?token=bogus", None, 1 << 30, b"404"),
        (b"POST /api/models/alice/authfirst/commit/main", None, 200 << 20, b"401"),
        (b"POST /api/models/alice/authfirst/commit/main", "hf_not_a_token_0123456789", 200 << 20, b"401"),
        (b"POST /api/models/alice/authfirst/commit/main", bob, 200 << 20, b"403"),
    ]
    for head, token, length, status in cases:
        auth = b"Authorization: Bearer " + token.encode() + b"\r\n" if token else b""
        start = time.monotonic()
        answer = raw(server, head + b" HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Type: application/x-ndjson\r\n"
                     b"Content-Length: " + str(length).encode() + b"\r\n\r\n" + b"x" * 65536, wait=8)
        elapsed = time.monotonic() - start
        assert answer.startswith(b"HTTP/1.1 " + status), (head, answer[:300])
        assert b"connection: close" in answer.split(b"\r\n\r\n")[0].lower(), answer[:300]
        assert elapsed < 1.0, (head, elapsed)  # not waiting for (or spooling) the announced body
    assert list((server.root / "tmp").iterdir()) == []  # nothing spooled


def test_a_client_still_sending_a_refused_body_gets_the_answer_not_a_reset(server):
    # Refused on its headers, the body is not stored, but what the client still sends is read and
    # dropped for a moment before the connection closes: closing on unread data would reset it, and a
    # client that sends its whole body before reading (as HTTP libraries do) would lose the 401.
    body = b"x" * (8 << 20)
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        sock.sendall(b"POST /api/models/alice/nobody/commit/main HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/x-ndjson\r\nContent-Length: " + str(len(body)).encode() +
                     b"\r\n\r\n" + body)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]


# ---------------------------------------------------------------------------------------------
# Slow, lying and greedy clients


def test_slow_headers_are_cut_off(server):
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /api/whoami-v2 HTTP/1.1\r\nHost: slow\r\n")
        answer = b""
        for i in range(40):  # one header line every 0.5 s, for up to 20 s
            time.sleep(0.5)
            try:
                sock.sendall(f"X-Slow-{i}: x\r\n".encode())
            except (BrokenPipeError, ConnectionResetError):
                break
            sock.setblocking(False)
            try:
                answer = sock.recv(65536)
                break
            except BlockingIOError:
                pass
            finally:
                sock.setblocking(True)
        elapsed = time.monotonic() - started
    assert elapsed < READ_TIMEOUT + 2, elapsed
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_a_body_shorter_than_its_length_is_cut_off(server):
    with socket.create_connection((server.host, server.port), timeout=15) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /api/repos/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Authorization: Bearer " + server.tokens["alice"].encode() + b"\r\n"
                     b"Content-Length: 1000\r\n\r\n{\"name\":")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        elapsed = time.monotonic() - started
    assert elapsed < READ_TIMEOUT + 2, elapsed
    assert answer.startswith(b"HTTP/1.1 4"), answer  # the worker is free again; the connection closed


def test_connections_per_client_are_limited(server):
    held = []
    try:
        for _ in range(PER_CLIENT):  # an attacker at 127.0.0.2 holds its share of connections...
            sock = socket.create_connection((server.host, server.port), timeout=5, source_address=("127.0.0.2", 0))
            sock.sendall(b"GET /api/whoami-v2 HTTP/1.1\r\n")
            held.append(sock)
        time.sleep(0.3)
        refused = raw(server, b"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\n\r\n", source="127.0.0.2")
        assert refused.startswith(b"HTTP/1.1 429"), refused
        assert b"TooManyConnections" in refused
        # ...while other clients are served at once.
        started = time.monotonic()
        status, _, body = request(server, "GET", "/api/whoami-v2", token=server.tokens["alice"])
        assert status == 200 and json.loads(body)["name"] == "alice"
        assert time.monotonic() - started < 1
    finally:
        for sock in held:
            sock.close()


def test_header_count_and_size_are_limited(server):
    token = server.tokens["alice"]
    base = f"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n"
    ok = raw(server, (base + "".join(f"X-{i}: y\r\n" for i in range(17)) + "\r\n").encode())  # 20 headers
    assert ok.startswith(b"HTTP/1.1 200"), ok
    too_many = raw(server, (base + "".join(f"X-{i}: y\r\n" for i in range(18)) + "\r\n").encode())
    assert too_many.startswith(b"HTTP/1.1 431"), too_many
    assert b"RequestHeaderFieldsTooLarge" in too_many
    too_big = raw(server, (base + "".join(f"X-{i}: {'y' * 6000}\r\n" for i in range(3)) + "\r\n").encode())
    assert too_big.startswith(b"HTTP/1.1 431"), too_big


def test_ambiguous_request_framing_is_refused(server):
    token = server.tokens["alice"].encode()
    body = b'{"name":"framing"}'
    for framing in (b"Content-Length: 18\r\nContent-Length: 18\r\n",
                    b"Content-Length: 18\r\nTransfer-Encoding: chunked\r\n",
                    b"Content-Length: +18\r\n"):
        answer = raw(server, b"POST /api/repos/create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                     b"\r\nContent-Type: application/json\r\n" + framing + b"\r\n" + body)
        assert answer.startswith(b"HTTP/1.1 400"), (framing, answer)
        assert answer.count(b"HTTP/1.1") == 1  # closed: the body is not read as a second request
    assert raw(server, b"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc").startswith(
        b"HTTP/1.1 400")
    status, _, _ = request(server, "GET", "/api/models/alice/framing", token=server.tokens["alice"])
    assert status == 404  # none of them created the repo


def test_requests_on_a_kept_alive_connection_are_not_delayed(server):
    import http.client
    import statistics
    connection = http.client.HTTPConnection(server.host, server.port, timeout=10)
    times = []
    for _ in range(20):
        start = time.perf_counter()
        connection.request("GET", "/api/organizations/none/overview")  # a small JSON answer (404)
        response = connection.getresponse()
        response.read()
        times.append(time.perf_counter() - start)
    connection.close()
    # Nagle's algorithm held each answer's second write for the client's delayed ACK: ~44 ms each.
    assert statistics.median(times) < 0.025, times  # margin for a loaded machine; Nagle's is ~40 ms


def test_a_request_without_length_has_no_body_and_is_answered_at_once(server):
    token = server.tokens["alice"].encode()
    for head, expected in ((b"POST /api/repos/create", b"HTTP/1.1 400"),  # no body: no repo name
                           (b"PUT /api/whoami-v2", b"HTTP/1.1 405"),      # a GET route
                           (b"POST /api/validate-yaml", b"HTTP/1.1 ")):
        start = time.monotonic()
        answer = raw(server, head + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer " +
                     token + b"\r\n\r\n", wait=8)
        elapsed = time.monotonic() - start
        assert answer.startswith(expected), (head, answer[:200])
        assert elapsed < 1.0, (head, elapsed)  # was the 10 s read timeout


# ---------------------------------------------------------------------------------------------
# One server per port and per root; temporary files


def test_a_second_server_cannot_take_the_port_or_the_root(server, tmp_path):
    other = subprocess.run([str(KBUILD), "hub", "serve", "--root", str(tmp_path / "other"), "--port",
                            str(server.port)], capture_output=True, text=True, timeout=20)
    assert other.returncode == 4, other.stderr
    assert f"port {server.port} is already in use" in other.stderr and "hint:" in other.stderr
    same_root = subprocess.run([str(KBUILD), "hub", "serve", "--root", str(server.root), "--port", "0"],
                               capture_output=True, text=True, timeout=20)
    assert same_root.returncode == 2, same_root.stderr
    assert "another kbuild hub serve is using the registry" in same_root.stderr
    status, _, _ = request(server, "GET", "/api/whoami-v2", token=server.tokens["alice"])
    assert status == 200  # the first one is unaffected


def test_start_sweeps_stale_temporary_files(tmp_path):
    root = tmp_path / "swept"
    (root / "tmp").mkdir(parents=True)
    (root / "uploads" / ("e" * 64)).mkdir(parents=True)
    (root / "tmp" / "body-123-0").write_bytes(b"x" * 1000)
    (root / "tmp" / "t123-4-abcd").write_bytes(b"y" * 24)
    (root / "uploads" / ("e" * 64) / "1").write_bytes(b"z" * 100)
    process, _ = start(root, "--port", "0")
    process.terminate()
    assert process.wait(timeout=15) == 0
    stderr = process.stderr.read()
    assert list((root / "tmp").iterdir()) == [] and list((root / "uploads").iterdir()) == []
    assert "removed 3 stale temporary file(s) and upload folder(s), 1124 bytes" in stderr, stderr


def peak_rss_mb(process):
    with open(f"/proc/{process.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def test_deep_json_is_refused_before_it_is_parsed_and_memory_stays_bounded(server):
    token = server.tokens["alice"]
    assert api(server, "POST", "/api/repos/create", {"name": "shape"}, token)[0] == 200
    before = peak_rss_mb(server.process)
    # 16 MiB of "[" anonymously (the first round measured 1,250 MB peak for this), then a commit line
    # of 48 MiB of "[" with a token (3.7 GB before).
    status, _, body = request(server, "POST", "/api/models/alice/shape/paths-info/main", b"[" * (16 << 20))
    assert status == 400 and b"nested deeper than 64" in body, body[:300]
    commit = ndjson(header()) + b"[" * (48 << 20) + b"\n"
    status, _, body = request(server, "POST", "/api/models/alice/shape/commit/main", commit, token,
                              "application/x-ndjson")
    assert status == 400 and b"commit line 2: JSON nested deeper than 64" in body, body[:300]
    after = peak_rss_mb(server.process)
    print(f"server peak RSS {before:.0f} MB before, {after:.0f} MB after")
    assert after < before + 200, (before, after)


def test_the_root_is_the_owners_only_whatever_the_umask(tmp_path):
    root = tmp_path / "private-root"
    token = add_token(root, "alice")
    os.chmod(root / "config.toml", 0o644)  # as an editor or `cp` under umask 022 would leave it
    process = subprocess.Popen([str(KBUILD), "hub", "serve", "--root", str(root), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: os.umask(0o022))
    line = process.stdout.readline()
    url = line.strip().rsplit(" at ", 1)[1]
    served = Server(root, url, process, {"alice": token})
    try:
        assert api(served, "POST", "/api/repos/create", {"name": "secret", "private": True}, token)[0] == 200
        body = b"private bytes " * 1000  # large enough to be spooled
        commit = ndjson(header(), {"key": "file", "value": {"path": "w.txt", "encoding": "base64",
                                                            "content": base64.b64encode(body).decode()}})
        status, _, answer = request(served, "POST", "/api/models/alice/secret/commit/main", commit, token,
                                    "application/x-ndjson")
        assert status == 200, answer
    finally:
        process.terminate()
        assert process.wait(timeout=15) == 0
    stderr = process.stderr.read()
    assert "config.toml holds tokens and is readable by others (mode 0644)" in stderr and "chmod 600" in stderr
    modes = {p.relative_to(root).as_posix(): p.stat().st_mode & 0o777 for p in [root, *root.rglob("*")]}
    assert modes.pop("config.toml") == 0o644  # warned about, left to its owner
    assert modes.pop(".") == 0o700
    blobs = [path for path in modes if path.startswith("blobs/") and "." not in path.rsplit("/", 1)[-1]]
    assert blobs, modes  # the commit's file is in the store
    wrong = {path: oct(mode) for path, mode in modes.items()
             if mode != (0o700 if (root / path).is_dir() else 0o600)}
    assert not wrong, wrong


# ---------------------------------------------------------------------------------------------
# Resumable multipart uploads


def test_an_interrupted_multipart_upload_resumes(server):
    alice = server.tokens["alice"]
    assert api(server, "POST", "/api/repos/create", {"name": "resume"}, alice)[0] == 200
    content = b"\0" + os.urandom(2 * CHUNK + 1000)
    oid = hashlib.sha256(content).hexdigest()
    ask = lambda: json.loads(api(server, "POST", "/alice/resume.git/info/lfs/objects/batch",  # noqa: E731
                                 {"operation": "upload", "objects": [{"oid": oid, "size": len(content)}]},
                                 alice)[2])["objects"][0]["actions"]["upload"]
    local = lambda url: urllib.parse.urlsplit(url)._replace(scheme="", netloc="").geturl()  # noqa: E731
    first = ask()
    etags = {}

    def put(upload, number):
        part = content[(number - 1) * CHUNK:number * CHUNK]
        status, fields, _ = request(server, "PUT", local(upload["header"][str(number)]), part,
                                    content_type="application/octet-stream")
        assert status == 200
        etags[number] = fields["etag"]

    put(first, 1)
    again = ask()  # the client died and asks again: the same session, part 1 kept, a fresh token
    token_of = lambda url: urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["token"][0]  # noqa: E731
    session_of = lambda url: urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["session"][0]  # noqa: E731
    assert token_of(again["href"]) != token_of(first["href"])
    assert session_of(again["href"]) == session_of(first["href"])
    put(again, 2)
    put(first, 3)  # the first token stays valid until the upload expires
    parts = [{"partNumber": n, "etag": etags[n]} for n in (1, 2, 3)]
    assert api(server, "POST", local(again["href"]), {"oid": oid, "parts": parts}, None)[0] == 200
    # Upload tokens are kept only hashed: a copy of the database gives nobody an upload URL.
    stored = b"".join(path.read_bytes() for path in server.root.glob("hub.sqlite*"))
    for url in (first["href"], again["href"]):
        assert token_of(url).encode() not in stored
    assert api(server, "POST", "/alice/resume.git/info/lfs/objects/verify", {"oid": oid, "size": len(content)},
               alice)[0] == 200


# ---------------------------------------------------------------------------------------------
# Pull requests and other Hub behaviour, with huggingface_hub


def test_pull_requests_with_huggingface_hub(server, tmp_path):
    out = run_client(server, tmp_path, """
        from huggingface_hub.utils import HfHubHTTPError
        repo = "alice/prs"
        api.create_repo(repo)
        base = api.upload_file(path_or_fileobj=b"v1", path_in_repo="a.txt", repo_id=repo).oid
        pr = api.create_pull_request(repo, title="Add b.txt", description="please")
        assert pr.is_pull_request and pr.status == "draft" and pr.git_reference == f"refs/pr/{pr.num}", pr
        api.upload_file(path_or_fileobj=b"b", path_in_repo="b.txt", repo_id=repo, revision=pr.git_reference)
        listed = list(api.get_repo_discussions(repo))
        assert [(d.num, d.is_pull_request, d.status) for d in listed] == [(pr.num, True, "open")], listed
        details = api.get_discussion_details(repo, pr.num)
        assert details.target_branch == "refs/heads/main" and details.conflicting_files == []
        assert [e.type for e in details.events] == ["comment", "commit"], details.events
        assert details.events[0].content == "please" and "b.txt" in details.diff
        api.merge_pull_request(repo, pr.num, comment="thanks")
        merged = api.get_discussion_details(repo, pr.num)
        assert merged.status == "merged" and merged.merge_commit_oid == api.repo_info(repo).sha
        assert api.file_exists(repo, "b.txt") and api.file_exists(repo, "a.txt")

        talk = api.create_discussion(repo, title="A question")
        change = api.change_discussion_status(repo, talk.num, "closed", comment="answered")
        assert change.new_status == "closed"
        assert api.get_discussion_details(repo, talk.num).status == "closed"
        api.change_discussion_status(repo, talk.num, "open")
        assert [d.num for d in api.get_repo_discussions(repo, discussion_status="open")] == [talk.num]
        api.comment_discussion(repo, talk.num, "more")

        # create_pr with a parentCommit that is no longer the head: 412.
        try:
            api.create_commit(repo, operations=[hh.CommitOperationAdd("c.txt", b"c")], commit_message="late",
                              create_pr=True, parent_commit=base)
            raise SystemExit("expected 412")
        except HfHubHTTPError as e:
            assert e.response.status_code == 412
        late = api.create_commit(repo, operations=[hh.CommitOperationAdd("c.txt", b"c")], commit_message="ok",
                                 create_pr=True)
        assert late.pr_num == talk.num + 1
        # Nothing to commit: the client skips the commit, the server never sees an empty one.
        again = api.upload_file(path_or_fileobj=b"v1", path_in_repo="a.txt", repo_id=repo)
        assert again.oid == api.repo_info(repo).sha
        print("ok")
        """, server.tokens["alice"])
    assert out.strip().endswith("ok")
    status, _, body = request(server, "POST", "/api/models/alice/prs/commit/main", ndjson(header("empty")),
                              server.tokens["alice"], "application/x-ndjson")
    assert status == 400 and b"no operations" in body


def test_suspicious_paths_are_refused(server):
    alice = server.tokens["alice"]
    assert api(server, "POST", "/api/repos/create", {"name": "paths"}, alice)[0] == 200
    for path in ("a\\b", "~/x", "a%2e%2e/b", "a%2Fb", "a%5Cb"):
        line = {"key": "file", "value": {"path": path, "content": base64.b64encode(b"x").decode(),
                                         "encoding": "base64"}}
        status, _, body = request(server, "POST", "/api/models/alice/paths/commit/main", ndjson(header(), line), alice,
                                  "application/x-ndjson")
        assert status == 400, (path, body)
    assert request(server, "GET", "/alice/paths/resolve/main/a%252e")[0] == 400

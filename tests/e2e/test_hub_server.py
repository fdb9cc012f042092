"""kbuild hub serve against the real huggingface_hub client (and the kernels trust check): repos, LFS
uploads (single PUT and multipart), refs, trees, downloads, kernel repos, organisations, tokens.

Client code runs in subprocesses because huggingface_hub reads HF_ENDPOINT when it is imported."""

import base64
import hashlib
import json
import os
import subprocess
import textwrap
import urllib.error
import urllib.request

import pytest

from conftest import KBUILD, PYTHON

pytestmark = pytest.mark.slow

CHUNK = 256 * 1024  # multipart-chunk of the test server, so a few hundred KiB take the multipart path


class HubServer:
    def __init__(self, root, url, process, tokens):
        self.root = root
        self.url = url
        self.process = process
        self.tokens = tokens

    def access_log(self):
        return (self.root / "access.log").read_text()


@pytest.fixture(scope="module")
def hub_server(tmp_path_factory):
    """A `kbuild hub serve` on 127.0.0.1 with a free port, tokens for alice (also kernels-community and
    org2) and bob, and a small multipart chunk size."""
    root = tmp_path_factory.mktemp("hub")
    (root / "config.toml").write_text(textwrap.dedent(f"""\
        [limits]
        multipart-chunk = {CHUNK}

        [[organizations]]
        name = "kernels-community"
        trusted-kernel-publisher = true
        """))
    tokens = {}
    for user, namespaces in (("alice", ["kernels-community", "org2"]), ("bob", [])):
        args = [KBUILD, "hub", "token", "--root", root, "--user", user]
        for ns in namespaces:
            args += ["--namespace", ns]
        result = subprocess.run([str(a) for a in args], capture_output=True, text=True, check=True)
        tokens[user] = result.stdout.strip()
    process = subprocess.Popen([str(KBUILD), "hub", "serve", "--root", str(root), "--port", "0", "--log",
                                str(root / "access.log")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    assert line.startswith("kbuild hub: serving "), line + process.stderr.read()
    url = line.strip().rsplit(" at ", 1)[1]
    yield HubServer(root, url, process, tokens)
    process.terminate()
    assert process.wait(timeout=10) == 0
    assert "kbuild hub: stopped" in process.stdout.read()


def run_client(server, tmp_path, code, token=None):
    """Runs `code` (after `import huggingface_hub as hh`, `api = hh.HfApi()`) with the server as HF_ENDPOINT."""
    script = tmp_path / "client.py"
    script.write_text("import json, os, huggingface_hub as hh\napi = hh.HfApi()\n" + textwrap.dedent(code))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(HF_ENDPOINT=server.url, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_XET="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1", KERNELS_CACHE=str(tmp_path / "kc"))
    if token:
        env["HF_TOKEN"] = token
    result = subprocess.run([PYTHON, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"client failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def http(server, method, path, body=None, token=None, content_type="application/json"):
    request = urllib.request.Request(server.url + path, data=body, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_model_repo_round_trip(hub_server, tmp_path):
    folder = tmp_path / "model"
    (folder / "sub" / "deep").mkdir(parents=True)
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# A model\n")
    (folder / "config.json").write_text('{"hidden": 16}\n')
    (folder / "weights.bin").write_bytes(bytes(range(256)) * 40)                  # LFS by pattern, one PUT
    (folder / "big.dat").write_bytes(b"\0" + os.urandom(3 * CHUNK + 1000))        # LFS by NUL, 4 parts
    (folder / "sub" / "deep" / "code.py").write_text("print('hi')\n")
    (folder / "empty.txt").write_bytes(b"")
    expected = {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in folder.rglob("*") if p.is_file()}

    out = run_client(hub_server, tmp_path, f"""
        from pathlib import Path
        import hashlib
        from huggingface_hub.utils import HfHubHTTPError
        from huggingface_hub.utils.sha import git_hash
        folder = Path({str(folder)!r})
        repo = "alice/model"
        url = api.create_repo(repo)
        assert url == os.environ["HF_ENDPOINT"] + "/alice/model", url
        assert api.create_repo(repo, exist_ok=True).repo_id == repo
        try:
            api.create_repo(repo)
            raise SystemExit("expected 409")
        except HfHubHTTPError as e:
            assert e.response.status_code == 409
        info = api.upload_folder(repo_id=repo, folder_path=folder, commit_message="add model")
        oid = info.oid
        assert len(oid) == 40
        # Nothing changed: the client skips the commit thanks to preupload's "oid".
        again = api.upload_folder(repo_id=repo, folder_path=folder, commit_message="again")
        assert again.oid == oid, (again.oid, oid)

        api.create_branch(repo, branch="dev")
        api.create_branch(repo, branch="dev", exist_ok=True)
        try:
            api.create_branch(repo, branch="dev")
            raise SystemExit("expected 409")
        except HfHubHTTPError as e:
            assert e.response.status_code == 409
        api.create_tag(repo, tag="v1.0", revision="dev")
        api.create_tag(repo, tag="v1.0", exist_ok=True)
        refs = api.list_repo_refs(repo)
        assert {{b.name for b in refs.branches}} == {{"main", "dev"}}, refs
        assert [(t.name, t.target_commit) for t in refs.tags] == [("v1.0", oid)], refs
        assert refs.converts == []

        tree = {{f.path: f for f in api.list_repo_tree(repo, recursive=True)}}
        files = {{p: f for p, f in tree.items() if isinstance(f, hh.hf_api.RepoFile)}}
        assert sorted(files) == {sorted(list(expected) + [".gitattributes"])!r}, sorted(files)
        assert files["weights.bin"].lfs is not None and files["big.dat"].lfs is not None
        assert files["config.json"].lfs is None and files["empty.txt"].lfs is None
        assert files["config.json"].blob_id == git_hash((folder / "config.json").read_bytes())
        assert files["big.dat"].lfs.size == {3 * CHUNK + 1001}
        assert files["big.dat"].lfs.pointer_size == 125 + len(str({3 * CHUNK + 1001}))
        assert isinstance(tree["sub/deep"], hh.hf_api.RepoFolder) and len(tree["sub/deep"].tree_id) == 40
        top = sorted(f.path for f in api.list_repo_tree(repo))
        assert "sub" in top and "sub/deep/code.py" not in top, top
        assert [f.path for f in api.list_repo_tree(repo, path_in_repo="sub/deep")] == ["sub/deep/code.py"]
        expanded = list(api.list_repo_tree(repo, path_in_repo="sub", expand=True))
        assert expanded[0].last_commit.oid == oid

        info = api.repo_info(repo, files_metadata=True)
        assert info.sha == oid
        siblings = {{s.rfilename: s for s in info.siblings}}
        assert siblings["big.dat"].lfs.sha256 == hashlib.sha256((folder / "big.dat").read_bytes()).hexdigest()
        assert api.repo_info(repo, revision="v1.0").sha == oid

        downloaded = {{}}
        for name in ["config.json", "big.dat", "sub/deep/code.py", "empty.txt"]:
            path = hh.hf_hub_download(repo, name)
            downloaded[name] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        snapshot = Path(hh.snapshot_download(repo, revision="v1.0"))
        for p in snapshot.rglob("*"):
            if p.is_file():
                downloaded[p.relative_to(snapshot).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
        assert (snapshot.parent.parent / "refs" / "v1.0").read_text() == oid
        assert not api.file_exists(repo, "missing.txt")

        # parentCommit that is no longer the head: 412, branch untouched.
        op = hh.CommitOperationAdd(path_in_repo="late.txt", path_or_fileobj=b"late")
        api.create_commit(repo, operations=[op], commit_message="first", parent_commit=oid)
        try:
            api.create_commit(repo, operations=[hh.CommitOperationAdd(path_in_repo="stale.txt", path_or_fileobj=b"x")],
                              commit_message="stale", parent_commit=oid)
            raise SystemExit("expected 412")
        except HfHubHTTPError as e:
            assert e.response.status_code == 412
        assert not api.file_exists(repo, "stale.txt")

        pr = api.create_commit(repo, operations=[hh.CommitOperationDelete(path_in_repo="sub/")],
                               commit_message="remove sub", create_pr=True)
        assert pr.pr_num == 1, pr.pr_url
        refs = api.list_repo_refs(repo, include_pull_requests=True)
        assert [p.ref for p in refs.pull_requests] == ["refs/pr/1"]
        assert api.file_exists(repo, "sub/deep/code.py")
        assert not api.file_exists(repo, "sub/deep/code.py", revision="refs/pr/1")
        api.delete_file("config.json", repo, revision="dev")
        assert not api.file_exists(repo, "config.json", revision="dev")
        api.delete_branch(repo, branch="dev")
        api.delete_tag(repo, tag="v1.0")
        assert [b.name for b in api.list_repo_refs(repo).branches] == ["main"]
        print(json.dumps(downloaded))
        """, token=hub_server.tokens["alice"])
    downloaded = json.loads(out.strip().splitlines()[-1])
    for name, digest in expected.items():
        assert downloaded[name] == digest, name
    log = hub_server.access_log()
    big_oid = expected["big.dat"]
    assert f"PUT /lfs/upload/{big_oid}/4 200" in log      # multipart parts...
    assert f"POST /lfs/upload/{big_oid} 200" in log       # ...and their completion
    assert f"PUT /lfs/upload/{expected['weights.bin']} 200" in log
    assert "xet" not in log


def test_kernel_repo_committed_with_ndjson(hub_server, tmp_path):
    token = hub_server.tokens["alice"]
    run_client(hub_server, tmp_path, """
        url = api.create_repo("kernels-community/relu", repo_type="kernel")
        assert url.endswith("/kernels/kernels-community/relu"), url
        """, token=token)
    so = b"\x7fELF\0\0" + os.urandom(300_000)
    large_text = b"x" * (10 * 1024 * 1024)  # text, but at the 10 MiB threshold: LFS
    files = {"build/torch-cpu/__init__.py": b"from ._ops import ops\n", "build/torch-cpu/_relu.so": so,
             "build/torch-cpu/large.txt": large_text, "README.md": b"# relu\n"}
    lines = [{"key": "header", "value": {"summary": "Build", "description": ""}}]
    lines += [{"key": "file", "value": {"path": p, "content": base64.b64encode(c).decode(), "encoding": "base64"}}
              for p, c in files.items()]
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    status, _, answer = http(hub_server, "POST", "/api/kernels/kernels-community/relu/commit/main", body, token,
                             "application/x-ndjson")
    assert status == 200, answer
    oid = json.loads(answer)["commitOid"]
    status, _, _ = http(hub_server, "POST", "/api/kernels/kernels-community/relu/branch/v1", b"{}", token)
    assert status == 200
    digests = {p: hashlib.sha256(c).hexdigest() for p, c in files.items()}

    out = run_client(hub_server, tmp_path, f"""
        from pathlib import Path
        import hashlib
        repo = "kernels-community/relu"
        refs = api.list_repo_refs(repo, repo_type="kernel")
        assert {{b.name: b.target_commit for b in refs.branches}} == {{"main": {oid!r}, "v1": {oid!r}}}
        tree = {{f.path: f for f in api.list_repo_tree(repo, repo_type="kernel", revision="v1", recursive=True)
                if isinstance(f, hh.hf_api.RepoFile)}}
        assert tree["build/torch-cpu/_relu.so"].lfs.sha256 == {digests["build/torch-cpu/_relu.so"]!r}
        assert tree["build/torch-cpu/large.txt"].lfs is not None
        assert tree["build/torch-cpu/__init__.py"].lfs is None
        variants = [f.path for f in api.list_repo_tree(repo, repo_type="kernel", path_in_repo="build")]
        assert variants == ["build/torch-cpu"], variants
        assert api.kernel_info(repo).sha == {oid!r}
        path = hh.hf_hub_download(repo, "build/torch-cpu/_relu.so", repo_type="kernel", revision="v1")
        got = {{"so": hashlib.sha256(Path(path).read_bytes()).hexdigest()}}
        snapshot = Path(hh.snapshot_download(repo, repo_type="kernel", revision="v1",
                                            allow_patterns=["build/torch-cpu/*"]))
        got["files"] = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file())
        got["large"] = hashlib.sha256((snapshot / "build/torch-cpu/large.txt").read_bytes()).hexdigest()
        # huggingface_hub 2.4 also commits to kernel repos itself (1.29 refused to).
        info = api.upload_file(path_or_fileobj=b"notes", path_in_repo="NOTES.md", repo_id=repo, repo_type="kernel")
        assert api.file_exists(repo, "NOTES.md", repo_type="kernel")
        print(json.dumps(got))
        """, token=token)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["so"] == digests["build/torch-cpu/_relu.so"]
    assert got["large"] == digests["build/torch-cpu/large.txt"]
    assert got["files"] == ["build/torch-cpu/__init__.py", "build/torch-cpu/_relu.so", "build/torch-cpu/large.txt"]


def test_organizations_and_tokens(hub_server, tmp_path):
    out = run_client(hub_server, tmp_path, f"""
        from huggingface_hub.utils import HfHubHTTPError
        from kernels.hf_hub import _check_trust_remote_code
        assert api.get_organization_overview("kernels-community").trustedKernelPublisher is True
        assert api.get_organization_overview("org2").trustedKernelPublisher is False
        try:
            api.get_organization_overview("alice")  # a user, not an organisation
            raise SystemExit("expected 404")
        except HfHubHTTPError as e:
            assert e.response.status_code == 404
        _check_trust_remote_code("kernels-community/relu", False, False)
        try:
            _check_trust_remote_code("org2/relu", False, False)
            raise SystemExit("org2 is not trusted")
        except ValueError:
            pass
        me = api.whoami()
        assert me["name"] == "alice" and [o["name"] for o in me["orgs"]] == ["kernels-community", "org2"], me
        results = {{}}
        for name, call in [("whoami", lambda: api.whoami(token="hf_wrong_token_value")),
                           ("create", lambda: api.create_repo("alice/x", token="hf_wrong_token_value")),
                           ("forbidden", lambda: api.create_repo("alice/y", token={hub_server.tokens["bob"]!r})),
                           ("anonymous", lambda: api.create_repo("alice/z", token=False))]:
            try:
                call()
                results[name] = None
            except HfHubHTTPError as e:
                results[name] = [e.response.status_code, e.response.headers.get("X-Error-Message")]
        print(json.dumps(results))
        """, token=hub_server.tokens["alice"])
    results = json.loads(out.strip().splitlines()[-1])
    assert results["create"] == [401, "Invalid credentials in Authorization header"]
    assert results["forbidden"][0] == 403
    assert results["anonymous"][0] == 401
    assert results["whoami"] == [401, "Invalid credentials in Authorization header"], results["whoami"]


def test_xet_token_is_refused_with_a_hint(hub_server):
    status, headers, body = http(hub_server, "GET", "/api/models/alice/model/xet-write-token/main",
                                 token=hub_server.tokens["alice"])
    assert status == 400
    assert "HF_HUB_DISABLE_XET" in json.loads(body)["error"]
    assert not any(k.lower().startswith("x-xet") for k in headers)

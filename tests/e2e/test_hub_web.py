"""The URL `kbuild publish` prints opens in a real browser against `kbuild hub serve` (issue 28): headless
Chromium loads the repository, tree and file pages, follows their links, and sees nothing of a private
repository (a browser sends no token)."""

import json
import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import build_args, copy_kernel, hub_server, run_kbuild

pytestmark = pytest.mark.slow

TOKEN = "hf_web_test_token_0123456789abcdef"
ORG = "web-org"
CPU_VARIANT = "torch211-cxx11-cpu-x86_64-linux"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("web-hub")
    (root / "config.toml").write_text(f'[[tokens]]\ntoken = "{TOKEN}"\nuser = "alice"\nnamespaces = ["{ORG}"]\n')
    os.chmod(root / "config.toml", 0o600)
    with hub_server(root) as url:
        yield {"url": url, "root": root}


@pytest.fixture(scope="module")
def published(hub, tmp_path_factory):
    kernel = copy_kernel(tmp_path_factory.mktemp("web-kernel") / "img2gray")
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    env = dict(os.environ, HF_ENDPOINT=hub["url"], HF_TOKEN=TOKEN, HF_HOME=str(kernel.parent / "hf"))
    result = run_kbuild("publish", kernel, "--tag", "v1.0.0", "--repo-id", f"{ORG}/img2gray", env=env)
    urls = re.findall(r"http://\S+", result.stdout)
    assert urls, result.stdout
    return urls[-1]


def browse(url: str) -> str:
    """The DOM of `url` after Chromium has loaded it."""
    assert CHROMIUM, "chromium is installed by scripts/bootstrap"
    result = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                             "--user-data-dir=/tmp/kbuild-chromium-profile-" + str(os.getpid()), "--dump-dom", url],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def links(dom: str) -> dict:
    return {re.sub(r"<[^>]+>", "", text): href.replace("&amp;", "&")
            for href, text in re.findall(r'<a href="([^"]+)">(.*?)</a>', dom)}


def test_the_printed_url_opens_in_a_browser_and_its_links_lead_to_the_files(hub, published):
    assert published == f"{hub['url']}/kernels/{ORG}/img2gray/tree/v1", published
    tree = browse(published)
    assert f"{ORG}/img2gray" in tree and "build/" in tree, tree[:2000]
    build = browse(links(tree)["build/"])
    variant = browse(links(build)[f"{CPU_VARIANT}/"])
    assert "metadata.json" in variant and "__init__.py" in variant, variant[:2000]
    metadata_page = browse(links(variant)["metadata.json"])
    assert "&quot;id&quot;" in metadata_page or '"id"' in metadata_page, metadata_page[:2000]
    download = links(metadata_page)["download"]
    with urllib.request.urlopen(download) as answer:
        assert json.loads(answer.read())["id"].startswith("_img2gray_cpu_")
    library = next(name for name in links(variant) if name.endswith(".so"))
    library_page = browse(links(variant)[library])
    assert "stored with LFS" in library_page and "<pre>" not in library_page
    repo = browse(f"{hub['url']}/kernels/{ORG}/img2gray")
    repo_links = links(repo)
    assert "v1" in repo_links and "v1.0.0" in repo_links and "main" in repo_links, repo[:2000]
    assert browse(repo_links["v1.0.0"]).count(f"{CPU_VARIANT}") == 0  # the tag's root lists build/, not variants


def test_a_private_repository_is_not_shown_to_a_browser(hub):
    request = urllib.request.Request(
        f"{hub['url']}/api/repos/create", method="POST",
        data=json.dumps({"type": "kernel", "name": "secret", "organization": ORG, "private": True}).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        assert answer.status == 200
    page = browse(f"{hub['url']}/kernels/{ORG}/secret")
    assert "Branches" not in page and "not found" in page.lower(), page[:2000]
    with urllib.request.urlopen(urllib.request.Request(f"{hub['url']}/kernels/{ORG}/secret",
                                                       headers={"Authorization": f"Bearer {TOKEN}"})) as owner:
        assert "Branches" in owner.read().decode()  # its owner, with the token, sees it


def test_names_are_escaped(hub):
    page = browse(f"{hub['url']}/kernels/{ORG}/img2gray/tree/v1/%3Cscript%3E")
    assert "<script>" not in page

"""kbuild hub serve behind a reverse proxy (nginx from Debian, configured here as a deployment would
be: HTTP/1.1 keep-alive to the registry, bodies streamed, X-Forwarded-For passed on), and its
connection model: a trusted proxy's connections are not one greedy client, requests are attributed to
the client the proxy names, idle keep-alive connections give their workers up to waiting clients, and
bursts of connections fit the listen backlog.

Loopback has many addresses (127.0.0.0/8), so different clients are different source addresses."""

import concurrent.futures
import socket
import subprocess
import textwrap
import time

import pytest

from conftest import free_port, running_nginx
from test_hub_security import add_token, raw, request, run_client, start

pytestmark = pytest.mark.slow

PER_CLIENT = 4
PROXY_SECRET = "proxy-secret-of-the-e2e-deployment-0123456789"

NGINX_PROXY_CONF = """\
{user}
worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {root}/body;
  proxy_temp_path {root}/proxy;
  fastcgi_temp_path {root}/fastcgi;
  uwsgi_temp_path {root}/uwsgi;
  scgi_temp_path {root}/scgi;
  upstream registry {{
    server 127.0.0.1:{upstream};
    keepalive 16;
  }}
  server {{
    listen 127.0.0.1:{port};
    client_max_body_size 0;
    client_body_timeout 30s;
    proxy_buffering off;
    location / {{
      proxy_pass http://registry;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Kbuild-Proxy-Secret "{secret}";
    }}
  }}
}}
"""


class Endpoint:
    def __init__(self, url):
        self.url = url
        self.host, port = url.removeprefix("http://").split(":")
        self.port = int(port)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """A registry trusting 127.0.0.1 (where nginx connects from), with nginx in front of it."""
    root = tmp_path_factory.mktemp("proxied-hub")
    (root / "config.toml").write_text(textwrap.dedent(f"""\
        [server]
        trusted-proxies = ["127.0.0.1"]
        proxy-secret = "{PROXY_SECRET}"

        [limits]
        max-connections-per-client = {PER_CLIENT}
        read-timeout-seconds = 3
        """))
    token = add_token(root, "alice")
    proxy_port = free_port()
    public = f"http://127.0.0.1:{proxy_port}"
    process, url = start(root, "--port", "0", "--base-url", public, "--log", str(root / "access.log"))
    with running_nginx(root / "nginx", NGINX_PROXY_CONF, proxy_port, upstream=Endpoint(url).port,
                       secret=PROXY_SECRET):
        yield {"root": root, "token": token, "registry": Endpoint(url), "proxy": Endpoint(public)}
    process.terminate()
    assert process.wait(timeout=15) == 0


def established_from(port, peer="127.0.0.1"):
    """Connections to `port` from `peer` that are open now (ss, iproute2)."""
    out = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{port} )"], capture_output=True,
                         text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if line.split()[-1].rsplit(":", 1)[0] == peer)


def test_huggingface_hub_works_through_the_proxy(deployment, tmp_path):
    # The LFS upload URLs the registry hands out name the public URL (--base-url), i.e. the proxy.
    out = run_client(deployment["proxy"], tmp_path, """\
        api.create_repo("alice/proxied")
        payload = bytes(range(256)) * 8192  # 2 MiB, binary: stored through LFS
        api.upload_file(path_or_fileobj=payload, path_in_repo="weights.bin", repo_id="alice/proxied")
        path = hh.hf_hub_download("alice/proxied", "weights.bin")
        print(json.dumps(open(path, "rb").read() == payload))
        """, deployment["token"])
    assert out.strip().splitlines()[-1] == "true"
    log = (deployment["root"] / "access.log").read_text()
    assert "PUT /lfs/upload/" in log  # the upload went through nginx to the registry


def test_a_request_is_attributed_to_the_client_the_proxy_names(deployment):
    proxy = deployment["proxy"]
    status, _, _ = request(proxy, "GET", "/api/models/alice/nothing-here", source="127.0.0.3")
    assert status == 404
    last = (deployment["root"] / "access.log").read_text().splitlines()[-1]
    assert last.endswith(" 127.0.0.3"), last  # not 127.0.0.1, nginx's own address
    # What a client writes into X-Forwarded-For itself is not believed when it connects directly.
    answer = raw(deployment["registry"], b"GET /api/models/alice/spoofed HTTP/1.1\r\nHost: x\r\n"
                                         b"X-Forwarded-For: 203.0.113.9\r\nConnection: close\r\n\r\n",
                 source="127.0.0.4")
    assert answer.startswith(b"HTTP/1.1 404")
    last = (deployment["root"] / "access.log").read_text().splitlines()[-1]
    assert last.endswith(" 127.0.0.4"), last


def test_wrong_tokens_are_throttled_per_client_behind_the_proxy(deployment):
    proxy = deployment["proxy"]
    statuses = [request(proxy, "GET", "/api/whoami-v2", token="hf_wrongwrongwrongwrong1", source="127.0.0.5")[0]
                for _ in range(25)]
    assert statuses[0] == 401 and statuses[-1] == 429, statuses
    # Another client behind the same proxy is judged on its own.
    assert request(proxy, "GET", "/api/whoami-v2", token="hf_wrongwrongwrongwrong1", source="127.0.0.6")[0] == 401
    status, _, _ = request(proxy, "GET", "/api/whoami-v2", token=deployment["token"], source="127.0.0.7")
    assert status == 200


def test_the_proxys_many_connections_are_not_one_greedy_client(deployment):
    proxy, registry = deployment["proxy"], deployment["registry"]

    def fetch(_):
        return request(proxy, "GET", "/api/models/alice/none")[0]

    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        for _ in range(3):
            statuses = list(pool.map(fetch, range(48)))
            assert statuses.count(404) == 48, statuses  # never 429
    # nginx keeps its upstream connections: more than a client may hold, all from one address.
    assert established_from(registry.port) > PER_CLIENT
    # A client that is not a proxy still gets the per-client limit.
    held = []
    try:
        for _ in range(PER_CLIENT):
            sock = socket.create_connection((registry.host, registry.port), timeout=5,
                                            source_address=("127.0.0.2", 0))
            sock.sendall(b"GET /api/whoami-v2 HTTP/1.1\r\n")
            held.append(sock)
        time.sleep(0.3)
        assert raw(registry, b"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\n\r\n", source="127.0.0.2").startswith(
            b"HTTP/1.1 429")
    finally:
        for sock in held:
            sock.close()


def test_idle_keep_alive_connections_give_their_workers_up(deployment):
    registry = deployment["registry"]
    idle = []
    try:
        # More kept-alive connections than the base workers (64), each idle after one answer; from 18
        # addresses, so that the per-client limit does not refuse them first.
        for index in range(72):
            sock = socket.create_connection((registry.host, registry.port), timeout=10,
                                            source_address=(f"127.0.4.{1 + index // PER_CLIENT}", 0))
            sock.sendall(b"GET /api/models/alice/none HTTP/1.1\r\nHost: x\r\n\r\n")
            idle.append(sock)
        for sock in idle:
            assert sock.recv(65536).startswith(b"HTTP/1.1 404")
        started = time.monotonic()
        status, _, _ = request(registry, "GET", "/api/models/alice/none", source="127.0.0.8")
        elapsed = time.monotonic() - started
        assert status == 404
        # Before: the newcomer waited for an idle connection's keep-alive timeout (5 s).
        assert elapsed < 2.0, elapsed
    finally:
        for sock in idle:
            sock.close()


def test_bursts_of_connections_fit_the_listen_backlog(deployment):
    registry = deployment["registry"]
    out = subprocess.run(["ss", "-Hltn", f"( sport = :{registry.port} )"], capture_output=True, text=True,
                         check=True).stdout.split()
    backlog = int(out[2])  # Send-Q of a listening socket: its backlog
    assert backlog >= 128, out  # httplib's own is 5


def test_the_proxys_own_host_is_a_client_like_any_other(deployment):
    """A client on the proxy's address that talks to the registry directly, without the proxy's secret:
    its X-Forwarded-For is ignored, its wrong tokens are throttled, and its connections are capped."""
    registry = deployment["registry"]
    forged = b"GET /api/models/alice/forged HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.77\r\nConnection: close\r\n\r\n"
    assert raw(registry, forged).startswith(b"HTTP/1.1 404")
    last = (deployment["root"] / "access.log").read_text().splitlines()[-1]
    assert last.endswith(" 127.0.0.1"), last
    # A wrong secret is no secret.
    wrong = forged.replace(b"Connection: close", b"X-Kbuild-Proxy-Secret: guessed-0123456789-0123456789-01\r\nConnection: close")
    assert raw(registry, wrong).startswith(b"HTTP/1.1 404")
    assert (deployment["root"] / "access.log").read_text().splitlines()[-1].endswith(" 127.0.0.1")
    # Rotating X-Forwarded-For does not spread wrong tokens over many "clients".
    statuses = []
    for index in range(25):
        answer = raw(registry, (f"GET /api/whoami-v2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer hf_wrongwrongwrongwrong9\r\n"
                                f"X-Forwarded-For: 198.51.100.{index}\r\nConnection: close\r\n\r\n").encode())
        statuses.append(int(answer.split(b" ", 2)[1]))
    assert statuses[0] == 401 and statuses[-1] == 429, statuses
    # Its connections count against the per-client cap once they carry a request without the secret.
    held = []
    try:
        for _ in range(PER_CLIENT):
            sock = socket.create_connection((registry.host, registry.port), timeout=5)
            sock.sendall(b"GET /api/models/alice/none HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 404")
            held.append(sock)
        assert raw(registry, b"GET /api/models/alice/none HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 429")
        # The proxy's own connections carry the secret: they are not capped meanwhile.
        assert request(deployment["proxy"], "GET", "/api/models/alice/none", source="127.0.0.9")[0] == 404
    finally:
        for sock in held:
            sock.close()


def test_slow_bodies_behind_the_proxy_stop_nobody(deployment):
    """70 anonymous uploads trickled through nginx from one address: nginx buffers request bodies (the
    documented set-up), so they never reach the registry, and everyone else is served meanwhile."""
    import sys
    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "tests" / "load"))
    import slow_clients
    proxy = deployment["proxy"]
    slow_clients.prepare_commits(proxy.host, proxy.port, deployment["token"], "127.0.0.31")  # alice/slow-target
    clients = slow_clients.SlowClients(proxy.host, proxy.port, 70, ["127.0.0.30"], 2.0, "body")
    clients.start()
    try:
        time.sleep(3)
        latencies, failures = slow_clients.timed_requests(proxy.host, proxy.port, deployment["token"], 30,
                                                         "127.0.0.31", 10.0, 0.05)
    finally:
        clients.stop()
    assert failures == [], failures
    assert max(latencies) < 2000, latencies
    log = (deployment["root"] / "access.log").read_text()
    assert "paths-info" not in log  # nginx held the bodies; the registry saw none of them

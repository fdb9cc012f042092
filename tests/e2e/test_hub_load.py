"""kbuild hub serve under load (the registry's load tests, tests/load/, in the slow tier; their figures
are in docs/reliability.md): 1,000 readers that keep their connections between rounds and a publisher
committing meanwhile all finish, with bounded latency and no reconnection, also while 100 of them
download a 50 MB file; anonymous clients trickling 16 MiB bodies from a few addresses stop nobody and
are cut off; more idle connections than the server has descriptors leave readers and commits served."""

import resource
import sys
import tempfile

import pytest

from conftest import KBUILD, ROOT

sys.path.insert(0, str(ROOT / "tests" / "load"))
import idle_flood  # noqa: E402
import keepalive_readers  # noqa: E402
import slow_clients  # noqa: E402

pytestmark = pytest.mark.slow

READERS = 1000


@pytest.fixture()
def registry():
    # This process holds a socket per reader; the server raises its own limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4 * READERS:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * READERS), hard))
    with tempfile.TemporaryDirectory() as root:
        process, url, token = keepalive_readers.start_server(str(KBUILD), root)
        yield url, token
        process.terminate()
        assert process.wait(timeout=15) == 0


def test_a_thousand_keep_alive_readers_and_a_publisher_finish_with_bounded_latency(registry):
    url, token = registry
    figures = keepalive_readers.measure(url, token, readers=READERS, rounds=3, pause=3.0, addresses=100, commits=5)
    assert figures["errors"] == []
    assert figures["reads"] == READERS * 3 * 2
    assert figures["commits"] == 5
    # Before idle connections were parked off their workers: p50 70.9 s, a commit waited 89.9 s,
    # resets; with a 250 ms grace and closing instead of parking: p99 4.4 s, commits 3.6 s, every
    # reader reconnected. Measured here with parking: p99 about 0.5 s, commits under 10 ms.
    assert figures["read_p99"] < 2.0, figures
    assert figures["read_max"] < 4.0, figures
    assert figures["commit_max"] < 2.0, figures
    # Pauses stay below the keep-alive timeout (5 s) and 6 requests below the per-connection cap.
    assert figures["reconnects"] == 0, figures


def test_a_thousand_readers_all_get_answers_while_a_hundred_download_50_mb(registry):
    url, token = registry
    figures = keepalive_readers.measure(url, token, readers=READERS, rounds=1, pause=3.0, addresses=100, commits=3,
                                        large=100, large_mb=50)
    assert figures["errors"] == [], figures["errors"][:10]
    assert figures["reads"] == READERS * 2 and figures["downloads"] == 100
    # Before: a connection parked while the workers streamed the downloads kept its 5 s idle deadline
    # while it waited for one, and was closed with its request unread (886 of 1,000 reconnected, p99
    # 6.0 s, a commit 5.0 s). The readers here reconnect only when this 2-core machine delays them past
    # the keep-alive timeout.
    assert figures["reconnects"] < READERS // 10, figures
    assert figures["read_p99"] < 3.0 and figures["commit_max"] < 2.0, figures


def test_slow_bodies_from_a_few_addresses_stop_nobody_and_are_cut_off():
    # 80 anonymous POSTs announcing 16 MiB, from 5 addresses, each sending 64 KiB every 8 s (above every
    # per-read floor). Before: every worker waited on them and every whoami and commit timed out.
    figures = slow_clients.measure(str(KBUILD), 80, [f"127.0.0.{i}" for i in range(2, 7)], 8.0, "body", 150,
                                   timeout=10.0, pause=0.1, warmup=3.0, limits="body-grace-seconds = 5")
    assert figures["failed"] == 0, figures
    # Measured here: p99 5-10 ms, and a rare request of up to 2 s while 80 slow clients reconnect at once
    # (this 2-core machine runs their 80 Python threads too).
    assert figures["p99_ms"] < 2500, figures
    # Past the grace each body is due at min-body-rate on average: the server cut every one of them.
    assert figures["slow_dropped_by_server"] >= 80, figures


def test_more_idle_connections_than_descriptors_leave_readers_and_commits_served():
    # 1,500 idle connections from 100 addresses against a server with 1,024 descriptors. Before: reads
    # took up to 4.9 s and commits failed with 500 (no descriptor for the database).
    figures = idle_flood.measure(str(KBUILD), idle=1500, addresses=100, descriptors=1024, requests=100)
    assert figures["failed"] == 0, figures
    assert figures["p99_ms"] < 1000, figures

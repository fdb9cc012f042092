"""kbuild hub serve under many kept-alive clients: 1,000 readers that keep their connections between
rounds and a publisher committing meanwhile all finish, with bounded latency and no reconnection
(tests/load/keepalive_readers.py does the work; docs/reliability.md has its figures)."""

import resource
import sys
import tempfile

import pytest

from conftest import KBUILD, ROOT

sys.path.insert(0, str(ROOT / "tests" / "load"))
import keepalive_readers  # noqa: E402

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

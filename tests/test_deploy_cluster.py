"""Two app processes behind nginx (deploy/run_cluster.py): both serve, a browser stays on one, the
proxy adds its security headers and enforces its limits, and the cluster command starts again a process
that dies while the proxy keeps serving.

It starts two Streamlit servers and nginx on 127.0.0.1, so it is marked ``slow``. Without nginx it
is skipped, except in CI (``CI=true``), where .ci/run installs nginx and a missing one fails.
All its traffic goes to loopback, and every loop in it is bounded.
"""

import base64
import hashlib
import http.client
import importlib.util
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import streamlit

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("run_cluster", ROOT / "deploy" / "run_cluster.py")
run_cluster = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_cluster)

WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def need_nginx() -> None:
    if run_cluster.nginx_binary() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("nginx is missing in CI (.ci/run installs it)")
        pytest.skip("nginx is not installed (apt-get install nginx)")


@pytest.fixture(scope="module")
def cluster():
    need_nginx()
    with run_cluster.Cluster(processes=2, show_upstream=True) as running:
        yield running


def get(cluster, path: str, cookie: str | None = None, method: str = "GET", headers: dict | None = None):
    """One request through nginx; returns (status, headers as a list of pairs)."""
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=30)
    try:
        all_headers = {**(headers or {}), **({"Cookie": cookie} if cookie else {})}
        conn.request(method, path, headers=all_headers)
        reply = conn.getresponse()
        reply.read()
        return reply.status, reply.getheaders()
    finally:
        conn.close()


def header(pairs, name: str) -> list[str]:
    return [value for key, value in pairs if key.lower() == name.lower()]


def route_cookie(pairs) -> str | None:
    cookies = [c.split(";", 1)[0] for c in header(pairs, "Set-Cookie") if c.startswith("explorer_route=")]
    return cookies[0] if cookies else None


def websocket_handshake(cluster, cookie: str) -> tuple[str, dict[str, str]]:
    """Open /_stcore/stream through nginx the way a browser does; returns the status line and headers."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        "GET /_stcore/stream HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{cluster.port}\r\n"
        f"Origin: http://127.0.0.1:{cluster.port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: streamlit\r\n"
        f"Cookie: {cookie}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", cluster.port), timeout=30) as sock:
        sock.sendall(request.encode())
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    status, *lines = data.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest()).decode()
    assert headers.get("sec-websocket-accept") == accept
    return status, headers


@pytest.mark.slow
def test_both_processes_serve_through_the_proxy(cluster):
    backends = {f"127.0.0.1:{port}" for port in cluster.app_ports}
    seen = set()
    for student in range(24):
        status, pairs = get(cluster, "/_stcore/health", cookie=f"explorer_route=student-{student}")
        assert status == 200
        seen.update(header(pairs, "X-Upstream"))
    assert seen == backends


@pytest.mark.slow
def test_a_browser_stays_on_one_process_over_http_and_websocket(cluster):
    status, pairs = get(cluster, "/")
    assert status == 200
    cookie = route_cookie(pairs)
    assert cookie, "the first reply sets the route cookie"
    (first,) = header(pairs, "X-Upstream")
    for path in ["/", "/_stcore/health", "/_stcore/host-config", "/multihead", "/_stcore/health"]:
        status, pairs = get(cluster, path, cookie=cookie)
        assert status == 200, path
        assert header(pairs, "X-Upstream") == [first], path
        assert route_cookie(pairs) is None, "a browser with the cookie keeps it"
    status_line, headers = websocket_handshake(cluster, cookie)
    assert status_line.split()[1] == "101", status_line
    assert headers["x-upstream"] == first


@pytest.mark.slow
def test_the_proxy_adds_frame_and_content_headers(cluster):
    status, pairs = get(cluster, "/")
    assert status == 200
    assert header(pairs, "Content-Security-Policy") == ["frame-ancestors 'self'"]
    assert header(pairs, "X-Frame-Options") == ["SAMEORIGIN"]
    assert header(pairs, "X-Content-Type-Options") == ["nosniff"]


@pytest.mark.slow
def test_a_body_over_the_limit_is_refused_before_it_reaches_the_app(cluster):
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=30)
    try:
        # Only the declared length: nginx answers from the header, before any body is sent.
        conn.putrequest("POST", "/_stcore/upload_file/x/y")
        conn.putheader("Content-Length", str(2 * 1024 * 1024))
        conn.endheaders()
        reply = conn.getresponse()
        assert reply.status == 413
        assert header(reply.getheaders(), "X-Upstream") == [], "no app process saw it"
    finally:
        conn.close()


@pytest.mark.slow
def test_a_request_flood_from_one_client_is_limited(cluster):
    """Beyond the burst (400) at 50 requests a second, one address gets 429; at most 2,000 requests."""
    time.sleep(400 / 50 + 0.5)  # the other tests' requests came from this address too: let the burst refill
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=30)
    statuses = []
    try:
        while len(statuses) < 2000 and 429 not in statuses:
            conn.request("GET", "/_stcore/health", headers={"Cookie": "explorer_route=flood"})
            reply = conn.getresponse()
            reply.read()
            statuses.append(reply.status)
    finally:
        conn.close()
    assert statuses.count(200) >= 400, "the burst a class needs gets through"
    assert statuses[-1] == 429


@pytest.mark.slow
def test_a_class_opening_the_app_gets_streamlits_code(cluster):
    """100 students behind one address open the app at once: about 70 of Streamlit's code files each, all
    served (its own zone), while the same number of other requests would be limited."""
    index = next((Path(streamlit.__file__).parent / "static" / "static" / "js").glob("index.*.js"))
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=30)
    statuses = []
    try:
        for _ in range(3000):
            conn.request("HEAD", f"/static/js/{index.name}", headers={"Cookie": "explorer_route=class"})
            reply = conn.getresponse()
            reply.read()
            statuses.append(reply.status)
    finally:
        conn.close()
    assert statuses.count(200) == len(statuses), f"refused: {sorted(set(statuses))}"


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive free ports on 127.0.0.1 (the cluster command's ``--first-app-port``)."""
    for _ in range(100):
        first = run_cluster.free_port()
        try:
            for port in range(first, first + count):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise AssertionError(f"no {count} consecutive free ports in 100 tries")


def lines_of(stream) -> queue.Queue:
    """The lines ``stream`` writes, in a queue filled by a thread (a read with a timeout)."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.rstrip()) for line in stream], daemon=True).start()
    return lines


def wait_for_line(lines: queue.Queue, pattern: str, seen: list[str], timeout: float) -> re.Match:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            seen.append(lines.get(timeout=left))
        except queue.Empty:
            break
        if found := re.search(pattern, seen[-1]):
            return found
    raise AssertionError(f"no line like {pattern!r} in {timeout:.0f} s; the command wrote: {seen}")


def health(port: int, cookie: str | None = None) -> tuple[int, str | None]:
    """``/_stcore/health`` on 127.0.0.1:port: (status, the X-Upstream that answered)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/_stcore/health", headers={"Cookie": cookie} if cookie else {})
        reply = conn.getresponse()
        reply.read()
        return reply.status, reply.getheader("X-Upstream")
    finally:
        conn.close()


def answers(port: int) -> bool:
    try:
        return health(port)[0] == 200
    except OSError:
        return False


RESTART_SECONDS = 120  # a fresh Streamlit process starts in 5-30 s on a busy 2-core machine


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_cluster_command_starts_a_killed_app_process_again_while_the_proxy_serves():
    """``python deploy/run_cluster.py``: SIGKILL one app process; every request to the proxy is answered meanwhile,
    the command logs the exit and starts the process again on its port, nginx sends browsers to it again, and
    SIGTERM then stops every process."""
    need_nginx()
    port, first = run_cluster.free_port(), free_ports(2)
    command = [sys.executable, "deploy/run_cluster.py", "--processes", "2", "--port", str(port)]
    command += ["--first-app-port", str(first)]
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, run_cluster.SHOW_UPSTREAM: "1"},  # health() reads which process answered
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines, seen = lines_of(proc.stdout), []
    pids = []
    try:
        killed = int(wait_for_line(lines, rf"app process on port {first}: pid (\d+)", seen, 180)[1])
        pids.append(killed)
        wait_for_line(lines, "open http", seen, 180)
        assert answers(port) and answers(first) and answers(first + 1)

        os.kill(killed, signal.SIGKILL)
        statuses, upstreams = [], set()
        killed_at = time.monotonic()
        deadline = killed_at + RESTART_SECONDS
        while not answers(first):  # the killed port serves again
            assert time.monotonic() < deadline, f"port {first} does not answer; the command wrote: {seen}"
            for n in range(4):  # keys that nginx spreads over both processes
                status, upstream = health(port, f"explorer_route=k{n}")
                statuses.append(status)
                upstreams.add(upstream)
            time.sleep(0.1)
        print(f"port {first} served again {time.monotonic() - killed_at:.1f} s after the kill; the proxy answered "
              f"{len(statuses)} requests meanwhile")  # fmt: skip
        assert set(statuses) == {200}, f"the proxy failed {len(statuses) - statuses.count(200)} of {len(statuses)}"
        assert len(statuses) >= 8, "the proxy was asked while the process was down"
        wait_for_line(lines, rf"app process on port {first} exited with code -9", seen, 10)
        again = int(wait_for_line(lines, rf"app process on port {first} started again: pid (\d+)", seen, 10)[1])
        pids.append(again)
        assert again != killed

        deadline = time.monotonic() + 60  # nginx tries a failed server again after its fail_timeout (10 s)
        while f"127.0.0.1:{first}" not in upstreams:
            assert time.monotonic() < deadline, f"nginx sends nobody to port {first}: {upstreams}"
            upstreams |= {health(port, f"explorer_route=k{n}")[1] for n in range(8)}
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 0, seen
    assert not any(answers(p) for p in (port, first, first + 1)), "SIGTERM stops nginx and every app process"
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.slow  # seconds: out of the quick check
def test_a_process_that_keeps_exiting_at_start_is_started_again_later_each_time(monkeypatch):
    """No restart storm: an app process that exits at once is started again after 1 s, then 2 s, then 4 s...;
    one that ran steadily is started again at once."""
    monkeypatch.setattr(run_cluster, "app_command", lambda port: [sys.executable, "-c", "raise SystemExit(3)"])
    cluster = run_cluster.Cluster(1)
    said = []
    try:
        cluster.apps = [cluster._spawn_app(cluster.app_ports[0])]
        cluster.supervise(seconds=6.5, poll_seconds=0.1, say=lambda text, **_: said.append(text))
    finally:
        cluster.stop()
    exits = re.findall(r"exited with code 3 after \d+ s; starting it again in (\d+) s", " ".join(said))
    delays = [int(delay) for delay in exits]
    assert delays == [1, 2, 4], said
    assert sum("started again" in line for line in said) == 2, said

    backoff = run_cluster.Restarts()
    assert [backoff.after_exit(0.5) for _ in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert backoff.after_exit(run_cluster.STEADY_SECONDS) == 0
    assert backoff.after_exit(0.5) == 1


@pytest.mark.parametrize("show", [False, True], ids=["by-default", "EXPLORER_SHOW_UPSTREAM"])
def test_replies_name_the_app_process_only_when_asked(show, tmp_path):
    """Issue 54: every reply carried ``X-Upstream: 127.0.0.1:8622``, an internal address. The proxy's own
    configuration, in front of a stand-in app process: no such header, unless the cluster is asked (its tests)."""
    import http.server

    need_nginx()

    class Healthy(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    app = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Healthy)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    cluster = run_cluster.Cluster(1, app_ports=[app.server_port], show_upstream=show)
    cluster.write_nginx_conf()
    proxy = subprocess.Popen([*cluster._nginx_command(), "-g", "daemon off;"], start_new_session=True)
    try:
        run_cluster.wait_healthy(f"{cluster.url}/_stcore/health", proxy, 30)
        status, pairs = get(cluster, "/_stcore/health")
        assert status == 200
        assert header(pairs, "X-Upstream") == ([f"127.0.0.1:{app.server_port}"] if show else [])
        named = [name for name, value in pairs if f":{app.server_port}" in value]
        assert named == (["X-Upstream"] if show else []), "no other header names the app's address"
    finally:
        run_cluster.stop(proxy)
        app.shutdown()

"""Run Attention Explorer as N Streamlit processes behind nginx, on this machine.

One Streamlit process runs one Python interpreter, so it uses about one core. This starts one
process per core (or ``--processes N``) on loopback ports, fills in ``deploy/nginx.conf.template``
for them, and runs nginx in front: sticky sessions by cookie, websockets, security headers and
per-client limits. Stop it with Ctrl-C; it stops every process it started.

    python deploy/run_cluster.py --processes 2 --port 8500    # then open http://127.0.0.1:8500

Needs nginx (Debian: ``apt-get install nginx``); nginx's own service need not run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).with_name("nginx.conf.template")
PLACEHOLDER = re.compile(r"\$\{(EXPLORER_[A-Z_]+)\}")
# Fewer malloc arenas: the server's memory grows more slowly under a class (BENCHMARKS.md, "Load").
APP_ENV = {"MALLOC_ARENA_MAX": "2"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def nginx_binary() -> str | None:
    """nginx's path, or None; Debian installs it in /usr/sbin, which a user's PATH may lack."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def render(template: str, values: dict[str, str]) -> str:
    """Fill in every ``${EXPLORER_*}`` placeholder, as envsubst does; a missing value is an error."""
    missing = sorted(set(PLACEHOLDER.findall(template)) - values.keys())
    if missing:
        raise ValueError(f"no value for {', '.join(missing)}")
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with code {proc.returncode} before {url} answered")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=3) as reply:  # noqa: S310 (http only)
            if reply.read() == b"ok":
                return
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer in {timeout:.0f} s")


def app_command(port: int) -> list[str]:
    """One Streamlit server on 127.0.0.1:port; only nginx faces the network."""
    server = ["--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true"]
    return [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", *server]


def stop(proc: subprocess.Popen) -> None:
    """Terminate a process group started here, then kill it if it does not exit."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


class Cluster:
    """``processes`` app servers and nginx on 127.0.0.1; ``start()`` returns the proxy's URL once all answer."""

    def __init__(
        self,
        processes: int,
        port: int | None = None,
        app_ports: list[int] | None = None,
        app_env: dict[str, str] | None = None,
    ) -> None:
        """``app_env`` is added to the app processes' environment (after ``APP_ENV``, which it may override)."""
        if processes < 1:
            raise ValueError("--processes must be at least 1")
        self.port = port or free_port()
        self.app_ports = app_ports or [free_port() for _ in range(processes)]
        self.url = f"http://127.0.0.1:{self.port}"
        self.app_env = {**APP_ENV, **(app_env or {})}
        self.runtime = Path(tempfile.mkdtemp(prefix="explorer-cluster-"))
        self.runtime.chmod(0o755)  # nginx started as root runs its workers as another user
        self.procs: list[subprocess.Popen] = []
        self.apps: list[subprocess.Popen] = []  # one per port of app_ports, once started
        self.proxy: subprocess.Popen | None = None  # nginx's master process (its worker is a child)

    def nginx_conf(self) -> str:
        servers = " ".join(f"server 127.0.0.1:{port};" for port in self.app_ports)
        values = {
            "EXPLORER_LISTEN": f"127.0.0.1:{self.port}",
            "EXPLORER_UPSTREAMS": servers,
            "EXPLORER_RUNTIME_DIR": str(self.runtime),
        }
        return render(TEMPLATE.read_text(), values)

    def _spawn(self, command: list[str], log_name: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        with (self.runtime / log_name).open("w") as log:
            proc = subprocess.Popen(  # noqa: S603 (our own command line)
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.procs.append(proc)
        return proc

    def start(self, timeout: float = 180.0) -> str:
        nginx = nginx_binary()
        if nginx is None:
            raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
        conf = self.runtime / "nginx.conf"
        conf.write_text(self.nginx_conf())
        nginx_cmd = [nginx, "-p", str(self.runtime), "-c", str(conf), "-e", "stderr"]
        check = subprocess.run([*nginx_cmd, "-t", "-q"], capture_output=True, text=True, check=False)  # noqa: S603
        if check.returncode != 0:
            raise RuntimeError(f"nginx rejected the generated configuration:\n{check.stderr}")
        env = {**os.environ, **self.app_env}
        try:
            self.apps = [self._spawn(app_command(port), f"app-{port}.log", env) for port in self.app_ports]
            self.proxy = self._spawn([*nginx_cmd, "-g", "daemon off;"], "nginx.log")
            for port, app in zip(self.app_ports, self.apps, strict=True):
                wait_healthy(f"http://127.0.0.1:{port}/_stcore/health", app, timeout)
            wait_healthy(f"{self.url}/_stcore/health", self.proxy, timeout)
        except BaseException:
            self.stop()
            raise
        return self.url

    def stop(self) -> None:
        for proc in reversed(self.procs):
            stop(proc)
        self.procs.clear()
        shutil.rmtree(self.runtime, ignore_errors=True)

    def log(self, name: str) -> str:
        path = self.runtime / name
        return path.read_text(errors="replace") if path.exists() else ""

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="app processes (default: cores)")
    parser.add_argument("--port", type=int, default=8500, help="the port nginx listens on, on 127.0.0.1")
    parser.add_argument("--first-app-port", type=int, default=8601, help="app processes use this port and up")
    args = parser.parse_args(argv)
    ports = list(range(args.first_app_port, args.first_app_port + args.processes))
    cluster = Cluster(args.processes, port=args.port, app_ports=ports)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with cluster:
        print(f"{args.processes} app processes behind nginx: open {cluster.url} (Ctrl-C stops all)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while all(proc.poll() is None for proc in cluster.procs):
                time.sleep(1)
        for proc in cluster.procs:
            if proc.poll() is not None:
                print(f"{proc.args[0]} exited with code {proc.returncode}; stopping the rest", file=sys.stderr)


if __name__ == "__main__":
    main()

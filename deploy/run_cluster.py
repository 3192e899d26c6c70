"""Run Attention Explorer as N Streamlit processes behind nginx, on this machine.

One Streamlit process runs one Python interpreter, so it uses about one core. This starts one
process per core (or ``--processes N``) on loopback ports, fills in ``deploy/nginx.conf.template``
for them, and runs nginx in front: sticky sessions by cookie, websockets, security headers and
per-client limits. It supervises them: a process that exits is logged and started again on its port while
nginx sends its browsers to the others, at once after a steady run, after a doubling delay when it keeps
exiting at start. Ctrl-C or SIGTERM stops every process it started.

    python deploy/run_cluster.py --processes 2 --port 8500    # then open http://127.0.0.1:8500

With ``EXPLORER_SHOW_UPSTREAM=1`` in its environment, every reply says which app process answered (``X-Upstream``);
the tests use it. Without it no reply names an internal address.

Needs nginx (Debian: ``apt-get install nginx``); nginx's own service need not run.
"""

from __future__ import annotations

import argparse
import contextlib
import math
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
SHOW_UPSTREAM = "EXPLORER_SHOW_UPSTREAM"  # "1": replies carry X-Upstream (the template's include)
PLACEHOLDER = re.compile(r"\$\{(EXPLORER_[A-Z_]+)\}")
# Fewer malloc arenas: the server's memory grows more slowly under a class
# (BENCHMARKS.md, "What the server's settings buy").
APP_ENV = {"MALLOC_ARENA_MAX": "2"}


STEADY_SECONDS = 60.0  # a process that ran this long had started well: it is restarted at once
FIRST_DELAY_SECONDS = 1.0  # then, while it keeps exiting sooner, the delay doubles up to the last
LONGEST_DELAY_SECONDS = 60.0


class Restarts:
    """When to start again a process that exited: at once after a steady run, else after a delay that doubles
    with each quick exit, so that a process that cannot start (a port taken, a broken install) is not restarted
    in a loop."""

    def __init__(self) -> None:
        self.delay = 0.0  # the last wait, in seconds

    def after_exit(self, ran_seconds: float) -> float:
        """The seconds to wait before the next start, for a process that ran ``ran_seconds``."""
        if ran_seconds >= STEADY_SECONDS:
            self.delay = 0.0
        else:
            self.delay = min(max(2 * self.delay, FIRST_DELAY_SECONDS), LONGEST_DELAY_SECONDS)
        return self.delay


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
        show_upstream: bool | None = None,
    ) -> None:
        """``app_env`` is added to the app processes' environment (after ``APP_ENV``, which it may override);
        ``show_upstream`` adds X-Upstream to every reply (None: as ``EXPLORER_SHOW_UPSTREAM=1`` asks)."""
        if processes < 1:
            raise ValueError("--processes must be at least 1")
        self.port = port or free_port()
        self.app_ports = app_ports or [free_port() for _ in range(processes)]
        self.url = f"http://127.0.0.1:{self.port}"
        self.app_env = {**APP_ENV, **(app_env or {})}
        self.show_upstream = os.environ.get(SHOW_UPSTREAM) == "1" if show_upstream is None else show_upstream
        self.runtime = Path(tempfile.mkdtemp(prefix="explorer-cluster-"))
        self.runtime.chmod(0o755)  # nginx started as root runs its workers as another user
        self.procs: list[subprocess.Popen] = []
        self.apps: list[subprocess.Popen] = []  # one per port of app_ports, once started
        self.proxy: subprocess.Popen | None = None  # nginx's master process (its worker is a child)
        self.started: dict[int, float] = {}  # a process's pid -> when it was started (time.monotonic)

    def nginx_conf(self) -> str:
        servers = " ".join(f"server 127.0.0.1:{port};" for port in self.app_ports)
        values = {
            "EXPLORER_LISTEN": f"127.0.0.1:{self.port}",
            "EXPLORER_UPSTREAMS": servers,
            "EXPLORER_RUNTIME_DIR": str(self.runtime),
        }
        return render(TEMPLATE.read_text(), values)

    def write_nginx_conf(self) -> None:
        """nginx's configuration in the runtime folder, with the include that adds X-Upstream if asked."""
        (self.runtime / "nginx.conf").write_text(self.nginx_conf())
        if self.show_upstream:
            (self.runtime / "show-upstream.conf").write_text("add_header X-Upstream $upstream_addr always;\n")

    def _spawn(self, command: list[str], log_name: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        with (self.runtime / log_name).open("a") as log:  # a restarted process writes on after its last run
            proc = subprocess.Popen(  # noqa: S603 (our own command line)
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.procs.append(proc)
        self.started[proc.pid] = time.monotonic()
        return proc

    def _nginx_command(self) -> list[str]:
        conf = self.runtime / "nginx.conf"
        return [str(nginx_binary()), "-p", str(self.runtime), "-c", str(conf), "-e", "stderr"]

    def start(self, timeout: float = 180.0) -> str:
        nginx = nginx_binary()
        if nginx is None:
            raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
        self.write_nginx_conf()
        nginx_cmd = self._nginx_command()
        check = subprocess.run([*nginx_cmd, "-t", "-q"], capture_output=True, text=True, check=False)  # noqa: S603
        if check.returncode != 0:
            raise RuntimeError(f"nginx rejected the generated configuration:\n{check.stderr}")
        try:
            self.apps = [self._spawn_app(port) for port in self.app_ports]
            for port, app in zip(self.app_ports, self.apps, strict=True):
                wait_healthy(f"http://127.0.0.1:{port}/_stcore/health", app, timeout)
            # nginx only once every process answers: a request it passed to a process still starting would
            # take that process out of the hash for fail_timeout (10 s), and send all its browsers elsewhere.
            self.proxy = self._spawn([*nginx_cmd, "-g", "daemon off;"], "nginx.log")
            wait_healthy(f"{self.url}/_stcore/health", self.proxy, timeout)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _spawn_app(self, port: int) -> subprocess.Popen:
        return self._spawn(app_command(port), f"app-{port}.log", {**os.environ, **self.app_env})

    def supervise(self, seconds: float = math.inf, poll_seconds: float = 0.5, say=print) -> None:
        """Start again each app process (on its port) and nginx when it exits, and ``say`` so, for ``seconds``
        or until interrupted (Ctrl-C, or SIGTERM made an exception). The others keep serving meanwhile: nginx
        sends a dead process's browsers to another process, and new ones back to it once it answers."""
        restarts: dict[str, Restarts] = {}
        due: dict[str, float] = {}  # a dead process's name -> when to start it again (time.monotonic)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for name, proc in self.watched().items():
                if proc.poll() is None:
                    continue
                now = time.monotonic()
                if name not in due:
                    ran = now - self.started.pop(proc.pid, now)
                    delay = restarts.setdefault(name, Restarts()).after_exit(ran)
                    due[name] = now + delay
                    say(f"{name} exited with code {proc.returncode} after {ran:.0f} s; starting it again in "
                        f"{delay:.0f} s", flush=True)  # fmt: skip
                elif now >= due[name]:
                    del due[name]
                    say(f"{name} started again: pid {self.start_again(proc).pid}", flush=True)
            time.sleep(poll_seconds)

    def watched(self) -> dict[str, subprocess.Popen]:
        """The processes ``supervise`` keeps running, by the name it logs."""
        apps = {f"app process on port {port}": app for port, app in zip(self.app_ports, self.apps, strict=True)}
        return {**apps, "nginx": self.proxy} if self.proxy is not None else apps

    def start_again(self, dead: subprocess.Popen) -> subprocess.Popen:
        """Start ``dead``, an app process or nginx that exited, again with its command line (its port)."""
        self.procs.remove(dead)
        if dead is self.proxy:
            self.proxy = self._spawn([*self._nginx_command(), "-g", "daemon off;"], "nginx.log")
            return self.proxy
        index = self.apps.index(dead)
        self.apps[index] = self._spawn_app(self.app_ports[index])
        return self.apps[index]

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
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # SIGTERM stops everything, as Ctrl-C does
    with cluster:
        for port, app in zip(cluster.app_ports, cluster.apps, strict=True):
            print(f"app process on port {port}: pid {app.pid}", flush=True)
        print(f"{args.processes} app processes behind nginx: open {cluster.url} (Ctrl-C stops all)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            cluster.supervise()


if __name__ == "__main__":
    main()

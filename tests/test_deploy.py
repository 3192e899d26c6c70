"""Deployability: a fresh virtual environment with only requirements.txt runs the app and answers /_stcore/health.

This is what a hosted deploy does. It takes a minute or two (it installs torch), so it is marked ``slow``:
the README's quick subset (``-m "not browser and not slow"``) leaves it out, and the full suite runs it.
"""

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from benchmarks.launch import free_port

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fresh_venv_installs_requirements_and_serves_health(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "-r",
            str(ROOT / "requirements.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    freeze = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    assert "torch==2.13.0" in freeze
    assert "nvidia" not in freeze.lower(), "the pinned torch must be the CPU build, without CUDA packages"

    app_dir = tmp_path / "app"
    shutil.copytree(ROOT, app_dir, ignore=shutil.ignore_patterns(".git", "artifacts", "__pycache__", ".*cache"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    server = subprocess.Popen(
        [
            str(python),
            "-m",
            "streamlit",
            "run",
            "streamlit_app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
        ],
        cwd=app_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        body = b""
        deadline = time.time() + 120
        while time.time() < deadline and server.poll() is None:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=3).read()
                break
            except OSError:
                time.sleep(0.5)
        assert body == b"ok", f"health endpoint answered {body!r}; server exit code {server.poll()}"
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read()
        assert b"<html" in page.lower()
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()

"""Deployability: a fresh virtual environment with only requirements.txt runs the app and answers /_stcore/health,
and there ``pip install .`` gives a package whose ``check`` works without the notebook extra, and
``pip install ".[notebook]"`` one whose ``explore`` draws (docs/notebook.md). A reader's own environment, with
``pip install ".[notebook]"`` alone, gets the ``attention`` package without the app or Streamlit, and both work.

This is what a hosted deploy and a reader do. It takes a minute or two (it installs torch), so it is marked ``slow``:
the quick check (``-m "not browser and not slow"``) leaves it out, and the full suite runs it.
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


CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def pip(python: Path, *arguments: str, cwd: Path | None = None) -> None:
    found = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *arguments],
        capture_output=True,
        text=True,
        timeout=1500,  # a fresh venv with torch, and for the extra JupyterLab; slower beside browser tests
        cwd=cwd,
        env=CLEAN_ENV,
    )
    assert found.returncode == 0, found.stderr[-3000:]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> tuple[Path, Path]:
    """A new virtual environment with requirements.txt installed, and a copy of the repository: (python, copy)."""
    root = tmp_path_factory.mktemp("fresh")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip(python, "-r", str(ROOT / "requirements.txt"))
    app_dir = root / "app"
    shutil.copytree(ROOT, app_dir, ignore=shutil.ignore_patterns(".git", "artifacts", "__pycache__", ".*cache"))
    return python, app_dir


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_fresh_venv_installs_requirements_and_serves_health(fresh):
    python, app_dir = fresh
    freeze = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    assert "torch==2.13.0" in freeze
    assert "nvidia" not in freeze.lower(), "the pinned torch must be the CPU build, without CUDA packages"

    port = free_port()
    env = CLEAN_ENV
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


READER = """
import sys
sys.path.insert(0, sys.argv[1])  # the copy's tests/ folder, for the book's classes as a reader types them
from attention.notebook import check, explore
from book_listings import CausalAttention

ca = CausalAttention(3, 2, 6, 0.0)
print(check(ca))
try:
    widget = explore(ca, "Your journey starts with one step")
    widget.go("weights")
    widget.select("attn_weights", 1, 0)
    print("explained:", widget.explanation[:80])
except ImportError as error:
    print("ImportError:", error)
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_package_works_without_the_notebook_extra_and_explore_with_it(fresh, tmp_path):
    python, app_dir = fresh
    pip(python, ".", cwd=app_dir)
    outside = tmp_path / "elsewhere"  # run away from the copy, so the installed package is the one imported
    outside.mkdir()

    def run() -> str:
        command = [str(python), "-c", READER, str(app_dir / "tests")]
        found = subprocess.run(command, cwd=outside, capture_output=True, text=True, env=CLEAN_ENV)
        assert found.returncode == 0, found.stderr[-3000:]
        return found.stdout

    without = run()
    assert "CausalAttention agrees with attention.CausalAttention" in without
    assert "ImportError: explore() needs ipywidgets, anywidget" in without and "[notebook]" in without
    pip(python, ".[notebook]", cwd=app_dir)
    with_extra = run()
    # a CausalAttention takes a batch: the sentence is batch item 0 of a batch of one
    assert "explained: attn_weights[0, 1, 0] is the attention weight" in with_extra, with_extra


ALONE = """
import importlib.metadata, importlib.util, sys
installed = importlib.metadata.files("attention-explorer")
print("installed packages:", sorted({f.parts[0] for f in installed if f.suffix == ".py" and len(f.parts) > 1}))
print("streamlit importable:", importlib.util.find_spec("streamlit") is not None)
print("explorer importable:", importlib.util.find_spec("explorer") is not None)
exec(sys.argv[2])  # the reader's check and explore
print("app modules imported:", sorted(m for m in sys.modules if m.split(".")[0] in ("explorer", "streamlit")))
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_notebook_extra_alone_installs_the_package_without_the_app_and_explore_works(tmp_path):
    """A reader's install: a fresh virtual environment with ``pip install ".[notebook]"`` only, no requirements.txt.
    It holds the ``attention`` package alone (no ``explorer``, no Streamlit), and ``check`` and ``explore`` work."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    copy = tmp_path / "repository"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "artifacts", "__pycache__", ".*cache", "node_*"))
    pip(python, ".[notebook]", cwd=copy)
    outside = tmp_path / "elsewhere"  # away from the copy, so only what pip installed can be imported
    outside.mkdir()
    command = [str(python), "-c", ALONE, str(copy / "tests"), READER]
    found = subprocess.run(command, cwd=outside, capture_output=True, text=True, env=CLEAN_ENV, timeout=600)
    assert found.returncode == 0, found.stderr[-3000:]
    said = found.stdout
    assert "installed packages: ['attention']" in said, said
    assert "streamlit importable: False" in said and "explorer importable: False" in said, said
    assert "CausalAttention agrees with attention.CausalAttention" in said, said
    assert "explained: attn_weights[0, 1, 0] is the attention weight" in said, said
    assert "app modules imported: []" in said, said

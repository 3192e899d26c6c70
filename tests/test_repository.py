"""The repository as a newcomer clones it: a licence, no stray archives, and nothing left untracked by an install.

``pip install .`` in a clone builds the package there (setuptools writes ``build/`` and ``*.egg-info/``); the
``.gitignore`` must cover what it leaves, or ``git status`` shows files the reader did not make.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
ARCHIVES = (".whl", ".tar.gz", ".tgz", ".zip", ".egg", ".tar", ".bz2", ".xz", ".7z")


def git(*arguments: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, text=True, check=True).stdout


def test_the_licence_is_mit_and_names_the_project():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Attention Explorer" in text
    assert "WITHOUT WARRANTY OF ANY KIND" in text


def test_requirements_take_torch_from_pytorchs_cpu_index():
    """pip prefers 2.13.0+cpu from PyTorch's CPU index to PyPI's 2.13.0 (whose Linux wheel pulls CUDA) only if the
    index is named and the pin admits the local version ``+cpu``."""
    lines = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    (torch,) = [Requirement(line) for line in lines if line.startswith("torch")]
    assert torch.specifier.contains("2.13.0+cpu") and torch.specifier.contains("2.13.0")
    assert not torch.specifier.contains("2.14.0")


def test_no_wheel_or_archive_is_tracked():
    tracked = git("ls-files").splitlines()
    assert [name for name in tracked if name.endswith(ARCHIVES)] == []


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_pip_install_in_a_clone_leaves_git_status_empty(tmp_path):
    clone = tmp_path / "clone"
    git("clone", "-q", str(ROOT), str(clone))
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp_path / "site"), "."],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (tmp_path / "site" / "attention" / "__init__.py").is_file()
    assert (clone / "build").is_dir(), "setuptools built in the clone, as a reader's pip install . does"
    assert git("status", "--porcelain", "--untracked-files=all", cwd=clone) == ""


def readme_commands() -> list[str]:
    """The README's bash blocks' lines, in order."""
    readme = (ROOT / "README.md").read_text()
    blocks = readme.split("```bash\n")[1:]
    return [line for block in blocks for line in block.split("```")[0].splitlines()]


def test_the_readme_fits_five_minutes_with_both_commands_near_the_top():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150
    top = "\n".join(lines[:40])
    assert "pip install -r requirements.txt && streamlit run streamlit_app.py" in top
    assert "pip install -r requirements-dev.txt && npm ci && python -m pytest" in top


def test_ci_runs_the_readmes_test_command():
    (test_command,) = [line for line in readme_commands() if "pytest" in line]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci


def test_every_file_the_readme_and_docs_link_exists():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#]+)\)", doc.read_text()):
            if not target.startswith("http"):
                assert (doc.parent / target).exists(), f"{doc.name} links to {target}, which does not exist"

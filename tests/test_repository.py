"""The repository as a newcomer clones it: a licence, no stray archives, nothing left untracked by an install, and
names that lead somewhere (each test file's to a module or a behaviour, each path and module a doc names to a file).

``pip install .`` in a clone builds the package there (setuptools writes ``build/`` and ``*.egg-info/``); the
``.gitignore`` must cover what it leaves, or ``git status`` shows files the reader did not make.
"""

import functools
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


# What a doc or a configuration names: a path in the repository (`explorer/session.py`, `tests/test_causal.py`) or a
# dotted module (`explorer.views.chapter.is_book`). A path after a colon is a file at a commit (`e1b2501:x.py`).
DOCS = [
    *["README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "docs/*.md"],
    *["pyproject.toml", ".streamlit/config.toml", ".ci/run", "tests/conftest.py", "benchmarks/*.py"],
]
FOLDERS = "attention|benchmarks|deploy|docs|explorer|notebooks|pages|scripts|tests"
NAMED_PATH = re.compile(rf"(?<![\w./:-])((?:{FOLDERS})/[\w./-]*\w)")
NAMED_MODULE = re.compile(r"(?<![\w./-])((?:attention|benchmarks|explorer)(?:\.[a-z_]\w*)+)")


def is_a_module_or_its_name(dotted: str) -> bool:
    """Whether ``a.b.c`` is a module of the repository, or a module and a name its source defines or imports."""
    folder, parts = ROOT, dotted.split(".")
    for i, part in enumerate(parts):
        if (folder / part / "__init__.py").is_file():
            folder = folder / part
            continue
        module = folder / f"{part}.py"
        source, name = (module, parts[i + 1 : i + 2]) if module.is_file() else (folder / "__init__.py", [part])
        return not name or re.search(rf"\b{name[0]}\b", source.read_text()) is not None
    return True


def names_that_are_gone(text: str) -> list[str]:
    paths = [name for name in NAMED_PATH.findall(text) if not (ROOT / name).exists()]
    return paths + [name for name in NAMED_MODULE.findall(text) if not is_a_module_or_its_name(name)]


def test_every_path_and_module_the_docs_and_configuration_name_exists():
    docs = [path for pattern in DOCS for path in sorted(ROOT.glob(pattern))]
    assert {ROOT / "ARCHITECTURE.md", ROOT / "docs" / "book.md", ROOT / ".streamlit" / "config.toml"} <= set(docs)
    gone = {str(doc.relative_to(ROOT)): names for doc in docs if (names := names_that_are_gone(doc.read_text()))}
    assert gone == {}


def test_a_path_or_module_that_is_gone_is_found_and_one_at_a_commit_is_not():
    gone = "`explorer/state.py`, tests/test_budget.py, `explorer.book_mode.is_book`, `attention.no_such_name`"
    assert names_that_are_gone(gone) == [
        "explorer/state.py",
        "tests/test_budget.py",
        "explorer.book_mode.is_book",
        "attention.no_such_name",
    ]
    there = "`explorer/session.py`, `e1b2501:benchmarks/gone.py`, `explorer.views.chapter.is_book`, `attention.trace`"
    assert names_that_are_gone(there) == []


# A test file is named for the module it tests (test_causal.py: attention/causal.py), a module and the part of it
# (test_heatmaps_cells.py), a page's AppTest (test_page_dropout.py: pages/dropout.py), or one of these behaviours.
BEHAVIOURS = {
    "app": "the app as a whole through AppTest: navigation, settings, links (explorer_app.py)",
    "architecture": "the layers and imports that ARCHITECTURE.md describes",
    "chart_alt": "every chart's text alternative, as a screen reader hears it",
    "code_panel": 'the "Show the code" panel',
    "colour_vision": "the colour scales under the common colour-vision deficiencies",
    "deploy": "deploy/ and the Dockerfile: a fresh install, the cluster, the files",
    "every_head": 'Multi-head attention\'s "Every layer and head" step',
    "first_view": "the first page's stored numbers, which scripts/first_view.py writes",
    "notation": "the book's notation in every string a learner reads (docs/book.md)",
    "repository": "the repository as a newcomer clones it",
    "weights": "the sidebar's Weights setting (a trained model) on every chapter page",
    "words": "the sentences on screen that once misled, as the pages render them",
}


@functools.cache
def module_names() -> frozenset[str]:
    """Every module's and package's name in the code a test may test."""
    packages = [ROOT / name for name in ("attention", "explorer", "pages", "benchmarks")]
    files = [path for package in packages for path in package.rglob("*.py")]
    return frozenset(path.parent.name if path.stem == "__init__" else path.stem for path in files)


def named_for_something(test_file: str) -> bool:
    name = test_file.removeprefix("test_").removesuffix(".py").removeprefix("page_")
    return any(name == known or name.startswith(known + "_") for known in module_names() | set(BEHAVIOURS))


def test_every_test_file_is_named_for_a_module_or_a_behaviour():
    test_files = sorted(path.name for path in (ROOT / "tests").glob("test_*.py"))
    assert len(test_files) > 50
    assert [name for name in test_files if not named_for_something(name)] == []
    assert not module_names() & set(BEHAVIOURS), "a module's name needs no entry among the behaviours"


def test_a_test_file_named_for_a_module_that_is_gone_is_found():
    assert named_for_something("test_causal.py") and named_for_something("test_page_causal_mask.py")
    gone = ["test_widths.py", "test_first_paint.py", "test_timing.py", "test_ui_exports.py", "test_page_nothing.py"]
    assert [name for name in gone if named_for_something(name)] == []

"""The explorer's layers (``explorer/__init__.py``), the package's import graph and the package standing alone
(no import of the app or Streamlit), checked from the source.

Every import counts, also one inside a function, except the lazy imports of torch and third-party modules:
a cycle or an import from a layer above its own fails here, naming the modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Lowest first. A module may import its own layer's modules (without a cycle) and any layer below.
LAYERS = (
    (
        "explorer.settings",
        "explorer.page_text",
    ),
    ("explorer.runtime",),
    ("explorer.models",),
    ("explorer.views",),
    ("explorer.session",),
    ("explorer.widgets", "explorer.room"),  # the live room, whole; the stepper and questions ask it
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, package: str) -> set[str]:
    """The ``explorer`` and ``attention`` modules ``path`` imports, anywhere in it, as absolute names."""
    found = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package, one level up per extra dot
                base = package.split(".") if is_package else package.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.split(".")[0] in ("explorer", "attention")}


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for folder in ("explorer", "attention") for p in (ROOT / folder).rglob("*.py")}
    edges = {}
    for name, path in modules.items():
        targets = {t for t in imports(path, name) if t in modules and t != name}
        edges[name] = targets
    return edges


def layer_of(module: str) -> int | None:
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def test_explorer_layers_import_only_downwards():
    upward = []
    for module, targets in graph().items():
        rank = layer_of(module)
        if rank is None:
            continue
        upward += [f"{module} -> {t}" for t in targets if (layer_of(t) or 0) > rank]
    assert not upward, "imports from a layer above: " + "; ".join(sorted(upward))


def test_every_explorer_module_has_a_layer():
    unplaced = [m for m in graph() if m.startswith("explorer.") and layer_of(m) is None]
    assert not unplaced, f"modules outside every layer of explorer/__init__.py: {unplaced}"


# The package stands alone: ``pip install ".[notebook]"`` gives the notebook's ``explore`` and ``check`` without the
# app (``tests/test_deploy.py`` installs it so). Nothing under attention/ imports the app or Streamlit, by an import
# statement or by a module's name in a string, as ``importlib.import_module`` and ``__import__`` take it.
APP_MODULE = re.compile(r"(?:explorer|streamlit)(?:\.[\w.]*)?")  # "explorer.models"; "explorer." of an f-string


def app_imports(path: Path) -> list[str]:
    """Where ``path`` imports the app (``explorer``) or Streamlit, anywhere in it, as "line N: name": an import
    statement, or a string that is such a module's name. Words in docstrings and comments may name them."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value.strip()]
        else:
            continue
        found += [f"line {node.lineno}: {name}" for name in names if APP_MODULE.fullmatch(name)]
    return found


def test_the_attention_package_imports_neither_the_app_nor_streamlit():
    found = {
        str(p.relative_to(ROOT)): uses for p in sorted((ROOT / "attention").rglob("*.py")) if (uses := app_imports(p))
    }
    assert not found, f"attention/ imports the app or Streamlit: {found}"


def test_the_app_import_check_finds_statements_and_names_in_strings(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        '"""Draws as explorer.figures does; explorer.cells writes the words."""\n'
        "import importlib\n"
        "import streamlit as st\n"
        "from explorer.cells import Cells\n"
        "def load(name):\n"
        "    from explorer import figures  # lazily\n"
        '    importlib.import_module("explorer.models")\n'
        '    __import__("streamlit")\n'
        '    importlib.import_module(f"explorer.{name}")\n'
        '    return "ae-explorer", "streamlit issues 8760"\n'
    )
    assert app_imports(module) == [
        "line 3: streamlit",
        "line 4: explorer.cells",
        "line 6: explorer",
        "line 7: explorer.models",
        "line 8: streamlit",
        "line 9: explorer.",
    ]


# ``pip install .`` installs torch, tiktoken and safetensors: the math needs nothing else. Figures and words, beside
# it, need the notebook extra (plotly, numpy), and the notebook's widgets theirs.
BESIDE_THE_MATH = ("attention.figures", "attention.prose", "attention.notebook")
NOTEBOOK_EXTRA = ("plotly", "numpy", "ipywidgets", "anywidget", "traitlets", "jupyterlab")


def imported_roots(path: Path) -> set[str]:
    """The top-level packages ``path`` imports, anywhere in it (relative imports left out)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_the_packages_math_imports_neither_figures_nor_words_nor_the_notebook_extra():
    modules = {module_name(p): p for p in (ROOT / "attention").rglob("*.py")}
    math = {m: p for m, p in modules.items() if not m.startswith(BESIDE_THE_MATH)}
    edges = graph()
    beside = {m: found for m in math if (found := sorted(t for t in edges[m] if t.startswith(BESIDE_THE_MATH)))}
    assert not beside, f"the math imports figures, words or the notebook: {beside}"
    extra = {m: found for m, p in math.items() if (found := sorted(imported_roots(p) & set(NOTEBOOK_EXTRA)))}
    assert not extra, f"the math needs the notebook extra: {extra}"
    assert "plotly" in imported_roots(ROOT / "attention" / "figures" / "__init__.py")  # the check reads imports


@pytest.mark.parametrize("package", ["explorer", "attention"])
def test_no_import_cycle(package):
    edges = {m: {t for t in ts if t.startswith(package)} for m, ts in graph().items() if m.startswith(package)}
    # a package's __init__ importing its own submodules is how it exports them, not a cycle of ideas
    for module in edges:
        edges[module] = {t for t in edges[module] if not module.startswith(t + ".") and t != package}
    state, cycle = {}, []

    def visit(node, path):
        state[node] = "open"
        for target in sorted(edges.get(node, ())):
            if state.get(target) == "open":
                cycle.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[node] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not cycle, "import cycles: " + "; ".join(cycle)


def test_the_project_layout_names_every_part_of_the_explorer():
    architecture = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    layout = architecture.split("## Project layout", 1)[1].split("```")[1]
    parts = [p.name for p in (ROOT / "explorer").iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    parts += [p.name for p in (ROOT / "explorer").glob("*.py") if p.name != "__init__.py"]
    missing = [name for name in parts if (name + "/" if "." not in name else name) not in layout]
    assert not missing, f"ARCHITECTURE.md's Project layout does not name: {missing}"
    for line in layout.splitlines():
        named = line.split()[0] if line and not line.startswith(" ") else None
        if named:
            assert (ROOT / named.rstrip("/")).exists(), (
                f"ARCHITECTURE.md's Project layout names {named}, which is not in the tree"
            )


def _named_in_docstrings(path: Path) -> list[str]:
    """The ``explorer.…`` / ``attention.…`` names and ``….py`` files a module's docstrings name in backticks."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node) or ""
            found += re.findall(r"``((?:explorer|attention)\.[\w.]+|[\w/]+\.py)``", doc)
    return found


def _exists(name: str) -> bool:
    """A module or file of the repository, or a name the package or a module of it defines."""
    if name.endswith(".py"):
        return any(ROOT.glob(f"**/{name}"))
    parts = name.rstrip(".").split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            if cut == len(parts):
                return True
            module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
            return re.search(rf"\b{re.escape(parts[cut])}\b", module.read_text()) is not None
    return False


def test_no_docstring_names_a_module_that_does_not_exist():
    files = [p for d in ("attention", "explorer", "pages", "tests") for p in (ROOT / d).rglob("*.py")]
    files += [ROOT / "streamlit_app.py", ROOT / "explorer_app.py"]
    missing = [f"{p.relative_to(ROOT)}: {name}" for p in files for name in _named_in_docstrings(p) if not _exists(name)]
    assert missing == [], "docstrings that name what is not there:\n" + "\n".join(missing)


PRIVATE_HOME = "explorer/runtime/patches.py"  # the one module that may use Streamlit's private names


def private_streamlit_uses(path: Path) -> list[str]:
    """Where ``path`` imports from inside the ``streamlit`` package (``streamlit.runtime``, ``from streamlit
    import string_util``) or reads a private attribute of it (``st._event``): what the public API does not give.
    ``import streamlit as st`` is public."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        what = None
        if isinstance(node, ast.Import):
            what = ", ".join(a.name for a in node.names if a.name.startswith("streamlit.")) or None
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "streamlit":
            what = f"from {node.module} import {', '.join(a.name for a in node.names)}"
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in ("st", "streamlit")
        ):
            what = f"{node.value.id}.{node.attr}"
        if what:
            found.append(f"line {node.lineno}: {what}")
    return found


def test_streamlits_private_names_are_used_in_one_module_only():
    files = [p for d in ("explorer", "pages") for p in (ROOT / d).rglob("*.py")]
    files += [ROOT / "streamlit_app.py", ROOT / "explorer_app.py"]
    outside = {
        str(p.relative_to(ROOT)): uses
        for p in files
        if str(p.relative_to(ROOT)) != PRIVATE_HOME and (uses := private_streamlit_uses(p))
    }
    assert not outside, f"Streamlit's private names outside {PRIVATE_HOME}: {outside}"
    assert private_streamlit_uses(ROOT / PRIVATE_HOME), "the check finds nothing where the private names are"


APP_FILES = [p for d in ("explorer", "pages") for p in sorted((ROOT / d).rglob("*.py"))]
APP_FILES += [ROOT / "streamlit_app.py", ROOT / "explorer_app.py"]
KEYS_HOME = "explorer/session.py"
STATE = r"(?:st\.session_state|\bstate)"
LITERAL_KEY = re.compile(  # state["k"], state.get("k"), .setdefault/.pop, f-strings too, and "k" in state
    rf"{STATE}(?:\.(?:get|setdefault|pop)\(|\[)\s*(f?\"[^\"]*\")|(f?\"[^\"]*\") (?:not )?in {STATE}\b"
)
STATE_KWARGS = re.compile(rf"{STATE}\.update\((\w+)=")
KEPT_CALL = re.compile(r"\b(?:kept_index|whole_state|kept_widget)\(\s*(f?\"[^\"]*\")")  # session.kept's keys
PAGE_KEY_CONSTANT = re.compile(r"^[A-Z_][A-Z_0-9, ]* = (f?\"[a-z_]+:[a-z_]+\")", re.M)  # "page:name", a page's key


def literal_session_keys(path: Path) -> list[str]:
    """Session-state keys written as strings in ``path`` that are not a widget's own key there (``key="…"``
    or the sidebar's ``w_`` keys)."""
    source = path.read_text(encoding="utf-8")
    widget_keys = set(re.findall(r"\bkey=(f?\"[^\"]*\")", source))
    found = []
    for match in LITERAL_KEY.finditer(source):
        literal = match[1] or match[2]
        if literal in widget_keys or literal.lstrip("f").startswith('"w_'):
            continue
        found.append(f"line {source.count(chr(10), 0, match.start()) + 1}: {literal}")
    found += [f"update({name}=…)" for name in STATE_KWARGS.findall(source)]
    found += [f"kept under {literal}" for literal in KEPT_CALL.findall(source)]
    if path.parent.name == "pages":  # a page's own key, "page:name" (a Redis channel elsewhere is no key)
        found += [f"constant {literal}" for literal in PAGE_KEY_CONSTANT.findall(source)]
    return found


def test_the_sessions_keys_are_declared_in_one_module():
    outside = {
        str(p.relative_to(ROOT)): found
        for p in APP_FILES
        if str(p.relative_to(ROOT)) != KEYS_HOME and (found := literal_session_keys(p))
    }
    assert not outside, f"session keys written as strings outside {KEYS_HOME}: {outside}"


def test_the_key_check_finds_a_key_written_as_a_string(tmp_path):
    page = tmp_path / "pages" / "page.py"
    page.parent.mkdir()
    page.write_text(
        'st.session_state["why_hidden"] = 4\nif "room_seen" in state:\n    state.get(f"cell:{page}")\n'
        'st.session_state.update(speed=1)\nst.number_input("d", key="speed_d")\nst.session_state["speed_d"]\n'
        'HEAD = "multihead:head"\nsession.kept_index("simplified:query", "query", "simplified", default=1, count=6)\n'
    )
    assert literal_session_keys(page) == [
        'line 1: "why_hidden"',
        'line 2: "room_seen"',
        'line 3: f"cell:{page}"',
        "update(speed=…)",
        'kept under "simplified:query"',
        'constant "multihead:head"',
    ]


# Every key the session keeps, and why a later run reads it: what one run's parts hand each other travels in
# ``session.this_run()`` instead, which begins with each run (issue 56).
OUTLIVES_THE_RUN = {
    "SETTINGS": "the sidebar's settings, read by every run",
    "SETTINGS_NOTICES": "why settings were corrected, shown in the next whole run's sidebar",
    "SET_HERE": "a page's button changed settings: the next run is the whole app's",
    "RUN_KEY": "the Run made for the settings, reused until they change",
    "PRESENTER": "presenter mode from the link, for every later run",
    "PHONE": "the browser's width class, measured once",
    "TOKEN_WINDOW": "the sidebar's token window, which a run of the page alone does not redraw",
    "WINDOW_TOKENS": "the token count the window was made for",
    "INITIAL_PARAMS": "the opening link's parameters, each read by the first run that needs it",
    "LINK_PAGE": "the page the link opened",
    "LINKED_KEYS": "the keys a link started, started again by the next link",
    "LINK_SLOT": "the sidebar's container, drawn by the whole run, filled by later page runs",
    "WHY_HIDDEN": "a page control's value across reruns",
    "SIMPLIFIED_QUERY": "a page control's value across reruns",
    "QKV_TEMPERATURE": "a page control's value across reruns",
    "QKV_NUM_KEYS": "a page control's value across reruns",
    "MULTIHEAD_HEAD": "a page control's value across reruns",
    "DROPOUT_SAMPLES": "a page control's value across reruns",
    "MISTAKE": "a page control's value across reruns",
    "SPEED_RESULT": "Speed's last measurement, redrawn by later runs",
    "GENERATE_NEW": "a page control's value across reruns",
    "GENERATE_TEMPERATURE": "a page control's value across reruns",
    "GENERATE_TOP_K": "a page control's value across reruns",
    "GENERATE_SEED": "a page control's value across reruns",
    "GENERATE_TOKEN": "a page control's value across reruns",
    "GENERATE_LAYER": "a page control's value across reruns",
    "GENERATE_HEAD": "a page control's value across reruns",
    "GENERATE_WINDOW": "a page control's value across reruns",
    "GENERATE_TIMES": "Generate's timing, shown until the next press",
    "CODE": "the room this session joined",
    "TOKEN": "a teacher's token for the room",
    "STUDENT": "a student's id in the room",
    "FOLLOWING": "whether a student follows the room",
    "SEEN": "the room version a student last read",
    "APPLIED": "the teacher's position a student last moved to",
    "PUBLISHED": "the position a teacher last published",
    "MESSAGE": "why the session left its room, until dismissed",
    "COOKIE_HELD": "the teacher's room cookie as this session believes it",
    "VOTER_HELD": "the student's voter id from the browser",
    "ROOM_LINK_READ": "the link's room read once per session",
    "ROOM_COOKIE_READ": "the room cookies read once per session",
    "ROOM_SLOT": "the sidebar's container for a presenter's room",
    "RESUMED": "a resumed room, said once",
}


def test_every_session_key_says_why_it_outlives_the_run():
    """No key hands a value from one function to another within a run: each one declared is read by a later run."""
    lines = re.findall(r'^([A-Z_][A-Z_0-9, ]*) = f?"', (ROOT / KEYS_HOME).read_text(encoding="utf-8"), re.M)
    declared = [name for line in lines for name in line.split(", ")]
    assert set(declared) == set(OUTLIVES_THE_RUN), set(declared) ^ set(OUTLIVES_THE_RUN)


def test_one_runs_record_begins_with_the_run_and_is_not_kept_in_the_session():
    from explorer import session

    first = session.this_run()
    first.figures.append({"name": "x"})
    assert session.this_run() is first
    with mock.patch.object(session, "st") as st, mock.patch.object(session, "current_run"):
        st.session_state = {}
        session.begin_run()
        assert session.this_run() is not first and session.this_run().figures == []
        assert not any(isinstance(v, session.ThisRun) for v in st.session_state.values())


# The app memoises in two ways: ``runtime.memory.SharedCache`` (one read-only result for every session, bounded
# by bytes: ``shared_view`` and the shared figures of ``widgets.charts``) and ``functools.lru_cache`` for pure
# functions of a few numbers or strings. Streamlit's caches copy (``st.cache_data``) or are unbounded in bytes.
OTHER_MEMOS = {
    "cache_data",
    "cache_resource",
    "experimental_memo",
    "experimental_singleton",
    "weakref",
    "WeakValueDictionary",
}
SHARED_CACHE_HOMES = {"explorer/runtime/memory.py", "explorer/widgets/charts.py"}
MAX_CONCURRENCY_SITES = 8  # 29 when issue 36 counted them; what each is for is said where it is made
CONCURRENCY = re.compile(r"\bthreading\.(?:Lock|RLock|Event|Condition|Semaphore|BoundedSemaphore|Thread|Timer)\(")


def other_memos(path: Path) -> list[str]:
    """The names of ``OTHER_MEMOS`` that ``path``'s code uses (its words may name them)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute | ast.Name):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names] + [getattr(node, "module", None) or ""]
            name = next((n for n in names if n.split(".")[-1] in OTHER_MEMOS), "")
        else:
            continue
        if name.split(".")[-1] in OTHER_MEMOS:
            found.append(f"line {node.lineno}: {name}")
    return found


def test_the_app_memoises_with_the_shared_cache_and_lru_cache_only():
    found = {str(p.relative_to(ROOT)): memos for p in APP_FILES if (memos := other_memos(p))}
    assert not found, f"another memoisation mechanism: {found}"
    homes = {str(p.relative_to(ROOT)) for p in APP_FILES if "SharedCache(" in p.read_text()}
    assert homes == SHARED_CACHE_HOMES


def test_the_memo_check_finds_streamlits_caches(tmp_path):
    page = tmp_path / "page.py"
    page.write_text('import weakref\nimport streamlit as st\n@st.cache_data\ndef f():\n    """st.cache_resource"""\n')
    assert other_memos(page) == ["line 1: weakref", "line 3: cache_data"]


def concurrency_sites(path: Path) -> list[str]:
    """Each lock, event, condition, semaphore and thread ``path`` makes, as "file:line"; a site without a reason
    (a comment on its line or the line above) is marked "no reason"."""
    lines = path.read_text().splitlines()
    sites = []
    for number, line in enumerate(lines):
        if CONCURRENCY.search(line.split("#")[0]):
            reason = "#" in line or lines[number - 1].strip().startswith("#")
            sites.append(f"{path.relative_to(ROOT)}:{number + 1}" + ("" if reason else " no reason"))
    return sites


def test_every_lock_event_and_thread_the_app_makes_says_why():
    sites = [site for p in APP_FILES for site in concurrency_sites(p)]
    assert not [s for s in sites if s.endswith("no reason")], sites
    assert len(sites) <= MAX_CONCURRENCY_SITES, sites

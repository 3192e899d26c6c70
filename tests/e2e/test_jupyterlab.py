"""The example notebook, ``notebooks/chapter3.ipynb``, in JupyterLab in Chromium, as a reader uses it.

The notebook types the book's classes and calls ``explore`` on each. Here JupyterLab runs it from the Run menu,
and for the reader's ``CausalAttention`` and ``MultiHeadAttention`` the test presses Next through every step and
clicks a cell of each step's first heatmap at its centre: the explanation must write the clicked number out,
and that number must be the one the same class computes here (``tests/book_listings.py``, same seeds). The
notebook also runs top to bottom in a fresh kernel under nbclient (``execute_notebook``), and the file it
would save holds plotly's module once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
import torch
from e2e_support import ARTIFACTS
from jupyter import click_plotly_cell, error_outputs, execute_notebook, jupyter_lab, new_page, open_notebook, run_all

from attention.embeddings import BOOK_INPUTS
from tests import book_listings as book

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "chapter3.ipynb"
SHOTS = ARTIFACTS / "jupyter"
BATCH = torch.stack((BOOK_INPUTS, BOOK_INPUTS))
ROW, COL = 2, 1  # query x^(3) "starts", key or dimension 1: below the diagonal, so no stage masks it
# Each explore() output's first line, which names the reader's class and its sizes.
EXPLORERS = {
    "CausalAttention": "Your CausalAttention, read as the book's CausalAttention: d_in = 3",
    "MultiHeadAttention": "Your MultiHeadAttention, read as the book's MultiHeadAttention: d_in = 3",
}


@contextlib.contextmanager
def importable_package():
    """The kernel imports ``attention`` from this checkout, as after ``pip install .``."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), before]))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = before


# Each step's first heatmap, by its title: the test clicks the step's own chart, never one Next is replacing.
TITLES = {
    "projections": "queries (q)",
    "scores": "attention scores ω = q · k",
    "mask": "masked scores",
    "weights": "attention weights α",
    "context": "context vectors z",
    "heads": "heads' context vectors, side by side",
    "output": "output = out_proj(context_vec)",
}


def expected(name: str) -> dict[str, torch.Tensor]:
    """Each step's first heatmap for batch item 1 and head 1, from the book's class run here."""
    torch.manual_seed(123)
    if name == "CausalAttention":
        module = book.CausalAttention(3, 2, 6, 0.0)
        heads, head_dim = 1, 2
    else:
        module = book.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
        heads, head_dim = 2, 1
    with torch.no_grad():
        x = BATCH[0]
        q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)  # (6, d_out)
        q0, k0, v0 = q[:, :head_dim], k[:, :head_dim], v[:, :head_dim]  # head 1
        scores = q0 @ k0.T
        masked = scores.masked_fill(torch.triu(torch.ones(6, 6, dtype=torch.bool), 1), -torch.inf)
        weights = torch.softmax(masked / head_dim**0.5, dim=-1)
        found = {"projections": q, "scores": scores, "mask": masked, "weights": weights, "context": weights @ v0}
        if heads > 1:
            per_head = []
            for h in range(heads):
                cols = slice(h * head_dim, (h + 1) * head_dim)
                s = (q[:, cols] @ k[:, cols].T).masked_fill(
                    torch.triu(torch.ones(6, 6, dtype=torch.bool), 1), -torch.inf
                )
                per_head.append(torch.softmax(s / head_dim**0.5, dim=-1) @ v[:, cols])
            found["heads"] = torch.cat(per_head, dim=-1)
            found["output"] = module(BATCH)[0]
        else:
            assert torch.allclose(found["context"], module(BATCH)[0], rtol=0, atol=1e-6)
    return found


def number(value: float) -> str:
    """As the cell panel writes a number: 4 decimals and a real minus sign."""
    text = f"{value:.4f}"
    return text.replace("-", "−") if float(text) != 0 else text.lstrip("-")


@pytest.fixture(scope="module")
def lab(tmp_path_factory, _browser_available):
    """One ``jupyter lab`` serving a copy of the example notebook."""
    root = tmp_path_factory.mktemp("notebooks")
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    with contextlib.ExitStack() as stack:
        stack.enter_context(importable_package())
        try:
            server = stack.enter_context(jupyter_lab(root, log=ARTIFACTS / "jupyter.log"))
        except RuntimeError as error:
            failure = str(error)
        else:
            failure = None
            yield server
    if failure:
        pytest.fail(failure, pytrace=False)


def test_a_reader_steps_through_their_own_modules_and_clicks_a_cell_of_every_step(lab, browser):
    context, page = new_page(browser, {"width": 1280, "height": 1400})  # tall: docs/notebook.md's picture fits
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        open_notebook(page, lab.base_url, lab.token, NOTEBOOK.name)
        run_all(page)
        explorers = page.locator(".ae-explorer")
        explorers.nth(5).wait_for(state="visible")  # the notebook's six explore() calls have shown
        for name, title in EXPLORERS.items():
            explorer = explorers.filter(has_text=title)
            numbers = expected(name)
            steps = list(numbers)
            for k, step in enumerate(steps):
                position = explorer.locator(".ae-step")
                assert f"Step {k + 1} of {len(steps)}" in position.inner_text(), (name, step)
                chart = explorer.locator(".ae-charts .js-plotly-plot").filter(has_text=TITLES[step]).first
                col = min(COL, numbers[step].shape[1] - 1)
                click_plotly_cell(page, chart, ROW, col)
                explanation = explorer.locator(".ae-explanation")
                shown = number(float(numbers[step][ROW, col]))
                explanation.locator("pre").first.wait_for(state="visible")
                page.wait_for_function(
                    "([el, value]) => el.innerText.includes(value)", arg=[explanation.element_handle(), f"= {shown}"]
                )
                text = explanation.inner_text()
                per_head = name == "MultiHeadAttention" and step in ("scores", "mask", "weights", "context")
                index = f"[0, 0, {ROW}, {col}]" if per_head else f"[0, {ROW}, {col}]"  # item 1 (and head 1), Python's
                assert index in text, (name, step, text)
                SHOTS.mkdir(parents=True, exist_ok=True)
                explorer.screenshot(path=SHOTS / f"{name}-step{k + 1}-{step}.png")  # to look at, in artifacts/
                if step == "weights" and name == "CausalAttention":
                    SHOTS.mkdir(parents=True, exist_ok=True)  # docs/notebook.md's picture, without the hover box
                    page.mouse.move(0, 0)
                    explorer.locator(".hoverlayer .hovertext").first.wait_for(state="detached")
                    explorer.screenshot(path=SHOTS / "explore-causal-weights.png")
                if k + 1 < len(steps):
                    explorer.get_by_role("button", name="Next ▸").click()
                    page.wait_for_function(
                        "([el, text]) => el.innerText.includes(text)",
                        arg=[position.element_handle(), f"Step {k + 2} of {len(steps)}"],
                    )
            assert explorer.get_by_role("button", name="Next ▸").is_disabled()
        assert not errors, errors
    except Exception:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SHOTS / "stepping_and_clicking.png", full_page=True)
        raise
    finally:
        context.close()


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The example notebook run top to bottom by nbclient in a fresh kernel, as ``jupyter nbconvert --execute``."""
    root = tmp_path_factory.mktemp("executed")
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    with importable_package():
        return execute_notebook(root / NOTEBOOK.name, timeout=300)


def test_the_example_notebook_runs_top_to_bottom_in_a_fresh_kernel(executed):
    nb = executed
    assert not error_outputs(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code)
    printed = "".join(o.get("text", "") for cell in code for o in cell.outputs if o.output_type == "stream")
    assert printed.count("agrees with attention.") == 5  # the book's five classes pass check()
    assert 'This is the mistake "Softmax over the wrong dimension"' in printed
    widgets = [
        o for cell in code for o in cell.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert len(widgets) == 6  # every explore() call showed its stepper


def test_the_executed_notebook_saves_plotlys_code_once(executed):
    """``jupyter nbconvert --to notebook --execute`` keeps every widget's state in the file: plotly's 5 MB module
    must be in it once, not once per heatmap (18 heatmaps made 92 MB), and the file at most 10 MB."""
    text = nbformat.writes(executed)
    states = executed.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    heavy = [key for key, model in states.items() if len(json.dumps(model["state"])) > 1_000_000]
    heatmaps = [model for model in states.values() if model["state"].get("_anywidget_id", "").endswith(".Heatmap")]
    assert len(heatmaps) == 18 and len(heavy) == 1, (len(heatmaps), len(heavy))
    assert len(text.encode()) <= 10_000_000, len(text.encode())

"""``attention.notebook.explore`` on the book's five classes as a reader types them (``tests/book_listings.py``):
every stage shows the module's own numbers, every cell's derivation makes the number shown, a click writes
it out, a mistaken module is flagged, and what it cannot show gets a message, not a traceback.

The browser side (JupyterLab in Chromium, a click at a cell's centre) is ``tests/e2e/test_jupyterlab.py``.
"""

import math
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import torch
from torch import nn

import attention
from attention.constants import BOOK_SENTENCE, BOOK_TOKENS
from attention.embeddings import BOOK_INPUTS, embed_tokens
from attention.notebook import explore
from attention.notebook.exploring import EMBEDDING_SEED, Exploration, ExploreError
from attention.tokens import tokenize
from tests import book_listings as book
from tests.test_notebook_check import CausalSoftmaxWrongDim, MultiHeadViewWithoutTranspose

ROOT = Path(__file__).resolve().parents[1]
BATCH = torch.stack((BOOK_INPUTS, BOOK_INPUTS))  # the book's batch of two, section 3.5.3

# The book's classes with the book's arguments and seeds, and the stages explore shows for each.
MODULES = {
    "SelfAttention_v1": (book.SelfAttentionV1, (3, 2), 123, BOOK_INPUTS),
    "SelfAttention_v2": (book.SelfAttentionV2, (3, 2), 789, BOOK_INPUTS),
    "CausalAttention": (book.CausalAttention, (3, 2, 6, 0.0), 123, BATCH),
    "MultiHeadAttentionWrapper": (book.MultiHeadAttentionWrapper, (3, 2, 6, 0.0, 2), 123, BATCH),
    "MultiHeadAttention": (book.MultiHeadAttention, (3, 2, 6, 0.0, 2), 123, BATCH),
}
STAGES = {
    "SelfAttention_v1": ["projections", "scores", "weights", "context"],
    "SelfAttention_v2": ["projections", "scores", "weights", "context"],
    "CausalAttention": ["projections", "scores", "mask", "weights", "context"],
    "MultiHeadAttentionWrapper": ["projections", "scores", "mask", "weights", "context", "heads"],
    "MultiHeadAttention": ["projections", "scores", "mask", "weights", "context", "heads", "output"],
}
LAST_PANEL = {"heads": "concatenated", "output": "output", "context": "context"}


def build(name):
    cls, args, seed, x = MODULES[name]
    torch.manual_seed(seed)
    return cls(*args), x


@pytest.mark.parametrize("name", MODULES)
def test_the_stages_are_the_chapters_in_its_order_and_the_last_is_the_modules_own_output(name):
    module, x = build(name)
    explored = Exploration(module, x)
    stages = explored.stages()
    assert [stage.key for stage in stages] == STAGES[name]
    with torch.no_grad():
        output = module(x)
    output = output if output.dim() == 3 else output.unsqueeze(0)
    for item in range(explored.batch_size):
        last = explored.stages(item)[-1]
        panel = next(p for p in last.panels if p.key == LAST_PANEL[last.key])
        if explored.num_heads == 1 or last.key != "context":  # one head's columns are the whole output only then
            assert torch.equal(torch.as_tensor(panel.matrix), output[item].double())  # the module's own numbers


@pytest.mark.parametrize("name", MODULES)
def test_every_cells_derivation_makes_the_number_shown(name):
    """Each cell's sum, written out in float64 from the module's float32 tensors, is the number on screen to
    within the stage's float32 rounding bound (``attention.notebook.precision``), on every head and item."""
    module, x = build(name)
    explored = Exploration(module, x)
    bound = {"queries": "queries", "keys": "keys", "values": "values", "context": "context", "output": "output"}
    checked = 0
    for item in range(explored.batch_size):
        for head in range(explored.num_heads):
            for stage in explored.stages(item, head):
                for panel in stage.panels:
                    rows, cols = panel.matrix.shape
                    limit = explored.bounds.get(bound.get(panel.key, "attn_weights"), 0.0)
                    if panel.key in ("attn_scores", "masked_scores"):  # computed here in float64: the same sum
                        limit = 1e-12
                    elif panel.key == "concatenated":
                        limit = explored.bounds["context"]
                    for row in range(rows):
                        for col in range(cols):
                            value = panel.cells.derive(row, col).value
                            shown = float(panel.matrix[row, col])
                            if math.isinf(shown):
                                assert value == shown, (stage.key, row, col)
                            else:
                                assert abs(value - shown) <= limit, (stage.key, panel.key, row, col, value, shown)
                            checked += 1
    assert checked > 100


def test_a_click_writes_out_the_clicked_weight_with_its_row_of_exps():
    module, x = build("CausalAttention")
    widget = explore(module, x)
    widget.go("weights")
    assert "Click a cell" in widget.explanation
    widget.select("attn_weights", 1, 0)
    weight = float(widget.stage.panels[0].matrix[1, 0])
    text = widget.explanation
    assert "α_21" in text and "“journey”" in text and "“Your”" in text
    assert f"= {weight:.4f}" in text
    assert "exp(−∞) = 0" in text  # key 3 onwards are masked for query 2
    assert "softmax:" in text  # the glossary's definition of a term the words use
    shapes = widget.figures["attn_weights"].layout.shapes
    assert len(shapes) == 1 and (shapes[0].x0, shapes[0].y0) == (-0.5, 0.5)  # the clicked cell is outlined


def test_the_stepper_moves_and_keeps_the_item_and_head():
    module, x = build("MultiHeadAttention")
    widget = explore(module, x)
    assert widget.previous_button.disabled and widget.stage.key == "projections"
    widget.next()
    widget.next()
    assert widget.stage.key == "mask" and "Step 3 of 7" in widget.position.value
    widget.item_picker.value = 1
    widget.head_picker.value = 1
    assert widget.stage.key == "mask" and widget.head_picker.layout.display == ""
    explored = widget.exploration
    expected = explored.scores[1, 1].masked_fill(torch.as_tensor(explored.head_mask(1)), -math.inf)
    assert torch.equal(torch.as_tensor(widget.stage.panels[0].matrix), expected)
    widget.go("output")
    assert widget.next_button.disabled and widget.head_picker.layout.display == "none"
    widget.select("output", 2, 1)
    assert "head 1" in widget.explanation and "head 2" in widget.explanation
    with pytest.raises(ValueError, match="no stage"):
        widget.go("nonsense")


def test_a_projection_names_the_matrix_as_the_module_holds_it():
    v1, x = build("SelfAttention_v1")
    widget = explore(v1, x)
    widget.select("queries", 2, 1)
    assert "times column 1 of W_query, added up" in widget.explanation
    v2, x = build("SelfAttention_v2")
    widget = explore(v2, x)
    widget.select("keys", 2, 1)
    assert "times column 1 of W_key.weight.T, added up" in widget.explanation  # nn.Linear keeps (d_out, d_in)


def test_the_code_panel_marks_the_readers_own_lines_of_the_step():
    module, x = build("CausalAttention")
    widget = explore(module, x)
    widget.go("mask")
    marked = [line for line in widget.code.value.split("\n") if 'class="ae-mark"' in line]
    assert marked and all("masked_fill" in line for line in marked)


def test_dropout_in_training_is_a_step_with_the_modules_own_draw():
    torch.manual_seed(123)
    module = book.MultiHeadAttentionWrapper(3, 2, 6, 0.5, 2)
    explored = Exploration(module, BATCH)
    keys = [stage.key for stage in explored.stages()]
    assert keys.index("dropout") == keys.index("weights") + 1
    dropped = explored.stages(0, 1)[keys.index("dropout")].panels[0].matrix
    kept = torch.as_tensor(dropped) != 0
    weights = explored.weights[0, 1]
    assert torch.allclose(torch.as_tensor(dropped)[kept], (weights * 2)[kept], rtol=0, atol=explored.bounds["context"])
    assert 0 < int(kept.sum()) < int((weights > 0).sum())  # this draw kept some weights and dropped others
    widget = explore(module.eval(), BATCH)
    assert "dropout" not in widget.stage_keys and "eval mode" in widget.children[0].value


def test_a_mistaken_module_is_flagged_at_the_stage_where_it_differs():
    torch.manual_seed(1)
    module = CausalSoftmaxWrongDim(3, 2, 6, 0.0)
    stages = {stage.key: stage for stage in Exploration(module, BATCH).stages()}
    assert stages["scores"].warning == "" and stages["mask"].warning == ""
    assert "not softmax(ω / √d_k)" in stages["weights"].warning and "check(module)" in stages["weights"].warning
    torch.manual_seed(1)
    module = MultiHeadViewWithoutTranspose(3, 4, 6, 0.0, 2)
    stages = {stage.key: stage for stage in Exploration(module, BATCH).stages()}
    assert any(stage.warning for stage in stages.values())


def test_a_sentence_is_tokenized_and_embedded_as_on_the_tokens_page():
    torch.manual_seed(123)
    book_sized = book.CausalAttention(3, 2, 6, 0.0)
    explored = Exploration(book_sized, BOOK_SENTENCE)
    assert explored.labels[0] == BOOK_TOKENS and torch.equal(explored.x[0], BOOK_INPUTS)
    torch.manual_seed(123)
    module = book.MultiHeadAttention(8, 4, 20, 0.0, 2)
    text = "The cat sat on the mat <b>"
    explored = Exploration(module, text)
    found = tokenize(text)
    assert explored.labels[0] == found.pieces
    assert torch.equal(explored.x[0], embed_tokens(found.ids, 8, seed=EMBEDDING_SEED))
    widget = explore(module, text, tokens=None)
    ticks = widget.figures["queries"].layout.yaxis.ticktext
    assert "&lt;b&gt;" in "".join(ticks)  # a typed token is escaped on the axis, never drawn as HTML


@pytest.mark.parametrize(
    ("module", "inputs", "tokens", "message"),
    [
        ("CausalAttention", torch.zeros(5), None, "inputs must be (num_tokens, d_in)"),
        ("CausalAttention", torch.zeros(4, 5), None, "with d_in = 3"),
        ("CausalAttention", torch.zeros(4, 3, dtype=torch.long), None, "must hold floats"),
        ("CausalAttention", torch.zeros(7, 3), None, "context_length of 6"),
        ("CausalAttention", [[0.1, 0.2, 0.3]], None, "a tensor or a sentence"),
        ("CausalAttention", "   ", None, "The sentence is empty"),
        ("CausalAttention", BOOK_INPUTS, ["a", "b"], "a list of 6 labels"),
        ("SelfAttention_v1", BATCH, None, "take one sentence"),
        ("Linear", BOOK_INPUTS, None, "explore() takes one of chapter 3's attention modules"),
        ("Raises", BOOK_INPUTS, None, "Your module's forward raised"),
    ],
)
def test_what_explore_cannot_show_gets_a_message_and_no_traceback(module, inputs, tokens, message):
    if module == "Linear":
        found = nn.Linear(3, 2)
    elif module == "Raises":
        found, _ = build("CausalAttention")
        found.forward = lambda x: x.missing_attribute
    else:
        found, _ = build(module)
    with pytest.raises(ExploreError, match=message.replace("(", r"\(").replace(")", r"\)")) as raised:
        explore(found, inputs, tokens)
    assert raised.value._render_traceback_() == [f"ExploreError: {raised.value}"]  # what IPython prints


def test_the_readers_module_is_left_as_it_was():
    module, x = build("MultiHeadAttention")
    before = {name: tensor.clone() for name, tensor in module.state_dict().items()}
    explore(module, x)
    after = module.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)
    hooks = [m for m in module.modules() if m._forward_hooks or m._forward_pre_hooks]
    assert not hooks and module.training


def test_without_the_notebook_extra_check_works_and_explore_says_what_to_install():
    code = (
        "import sys\n"
        "for name in ('ipywidgets', 'anywidget', 'plotly'): sys.modules[name] = None\n"
        "import torch\n"
        "from attention import CausalAttention\n"
        "from attention.notebook import check, explore\n"
        "module = CausalAttention(3, 2, 6, 0.0)\n"
        "assert check(module).agrees, check(module)\n"
        "try:\n"
        "    explore(module, torch.rand(6, 3))\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    found = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "needs ipywidgets, anywidget, plotly" in found.stdout and 'pip install ".[notebook]"' in found.stdout


def test_every_module_explore_imports_is_installed_with_the_package():
    """``pip install ".[notebook]"`` must carry what explore imports: its packages are listed in pyproject.toml,
    which installs ``attention`` alone, and it imports nothing of the app (``explorer``) nor Streamlit."""
    code = (
        "import sys, attention.notebook.widget, attention.notebook.exploring\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('explorer', 'attention', 'streamlit'))))"
    )
    found = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    modules = found.stdout.split()
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["notebook"]
    assert not [m for m in modules if m.split(".")[0] in ("explorer", "streamlit")]
    assert all(package.split(".")[0] == "attention" for package in packages)
    for module in modules:
        package = module if (ROOT / module.replace(".", "/") / "__init__.py").exists() else module.rpartition(".")[0]
        assert package in packages, f"{module} is imported by explore but its package is not installed"
    assert {req.split(">")[0].split("=")[0] for req in extra} >= {"ipywidgets", "anywidget", "plotly"}


PACKAGE = [
    (attention.SelfAttention_v1, (3, 2), BOOK_INPUTS),
    (attention.SelfAttention_v2, (3, 2), BOOK_INPUTS),
    (attention.CausalAttention, (3, 2, 6, 0.5), BATCH),
    (attention.MultiHeadAttentionWrapper, (3, 2, 6, 0.5, 2), BATCH),
    (attention.MultiHeadAttention, (3, 4, 6, 0.5, 2), BATCH),
]


@pytest.mark.parametrize(("cls", "args", "x"), PACKAGE, ids=[c.__name__ for c, _, _ in PACKAGE])
def test_the_packages_own_classes_in_training_are_read_through_their_steps(cls, args, x):
    """The package's dropout draws its mask apart from the weights (``drop_with_mask``), which hooks on
    ``self.dropout`` would misread: its classes are read with ``attention.trace``, and nothing is flagged."""
    torch.manual_seed(123)
    explored = Exploration(cls(*args), x)
    stages = explored.stages()
    assert not [stage.warning for stage in stages if stage.warning]
    if explored.sizes.dropout > 0:
        dropped = torch.as_tensor(next(s for s in stages if s.key == "dropout").panels[0].matrix)
        weights = explored.weights[0, 0]
        kept = dropped != 0
        assert torch.allclose(dropped[kept], weights[kept] * 2, rtol=0, atol=explored.bounds["dropped_weights"])


def test_a_mask_buffer_that_is_not_the_books_is_flagged_at_the_mask():
    module, x = build("CausalAttention")
    with torch.no_grad():
        module.mask.copy_(torch.tril(torch.ones(6, 6)))  # a reader's tril for triu
    stages = {stage.key: stage for stage in Exploration(module, x).stages()}
    assert stages["scores"].warning == ""
    assert (
        "Your mask buffer is not the book's" in stages["mask"].warning and "row 1, column 1" in stages["mask"].warning
    )


def test_a_wrappers_per_head_steps_name_the_head_and_show_the_heads_forward():
    module, x = build("MultiHeadAttentionWrapper")
    widget = explore(module, x)
    widget.head_picker.value = 1
    widget.select("keys", 2, 1)
    assert "column 1 of heads[1].W_key.weight.T" in widget.explanation
    widget.go("mask")
    assert widget.code_box.titles == ("Your heads' forward (each head's CausalAttention)",)
    assert "masked_fill" in widget.code.value and "No line of your forward" not in widget.code.value
    widget.go("heads")
    assert widget.code_box.titles == ("Your forward",) and "torch.cat" in widget.code.value


def test_multihead_cells_name_the_head_in_the_index():
    module, x = build("MultiHeadAttention")
    widget = explore(module, x)
    widget.head_picker.value = 1
    widget.go("weights")
    widget.select("attn_weights", 2, 1)
    assert widget.explanation.startswith("attn_weights[0, 1, 2, 1] is the attention weight α_32")
    widget.go("context")
    widget.select("context", 2, 0)
    assert widget.explanation.startswith("(attn_weights @ values)[0, 1, 2, 0] is entry")


def test_plotlys_code_is_one_widgets_state_however_many_heatmaps():
    """A saved notebook keeps every live widget's state: plotly's 5 MB module (plotly.js inside) is held there once,
    by one ``PlotlyCode``, not by each heatmap (chapter3.ipynb's 18 heatmaps made 92 MB); and a step's heatmaps
    are closed when the next step replaces them, so stepping adds nothing to keep."""
    module, x = build("MultiHeadAttention")
    first, second = explore(module, x), explore(module, x)
    heatmaps = [*first.figures.values(), *second.figures.values()]
    assert len(heatmaps) == 6 and len({id(heatmap._plotly_code) for heatmap in heatmaps}) == 1
    code = heatmaps[0]._plotly_code.get_state()["source"]
    assert len(code) > 1_000_000 and "plotly" in code
    assert all(len(heatmap.get_state()["_esm"]) < 10_000 for heatmap in heatmaps)
    shown = list(first.figures.values())
    first.next()
    assert all(heatmap.comm is None for heatmap in shown) and all(h.comm for h in first.figures.values())

"""``explore``'s stepper in a notebook: ipywidgets around plotly's ``FigureWidget`` (an anywidget).

The app's figure builders (``attention.figures.heatmap`` with its layer of clickable cell centres) draw each
stage's matrices, with the app's colour rules. Each is a ``Heatmap``: a FigureWidget whose front-end module is
``heatmap.js`` (2 kB) instead of plotly's own (5 MB, plotly.js inside), which is the state of one ``PlotlyCode``
widget per kernel. So a saved notebook stores plotly.js once and the page imports it once, where plotly's
FigureWidget does both once per figure. A click on a cell reaches Python through the FigureWidget's
``on_click``; the cell's ``attention.prose.cells.Cells`` gives its derivation and the app's words, shown under the
charts with the glossary's definitions of the terms they use, and the cell is outlined. The reader's
``forward`` is shown with the lines that make the stage marked.
"""

from __future__ import annotations

import html
import inspect
import re
from pathlib import Path

import ipywidgets as widgets
import plotly
import plotly.graph_objects as go
import traitlets
from plotly.basewidget import BaseFigureWidget

from attention.figures import PICK_TRACE, cell_marks, heatmap
from attention.prose.glossary import TERMS

from .exploring import Exploration, Panel, Stage

PROMPT = "Click a cell of a heatmap to see how its number was made."
_LINK = re.compile(r"\[([^\]]+)\]\(/glossary#([\w-]+)\)")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
STYLE = "".join(  # one rule a line
    (
        "<style>",
        ".ae-explorer .ae-warning {border-left: 4px solid #D55E00; padding: 2px 8px; margin-top: 4px}",
        ".ae-explorer .ae-explanation pre, .ae-explorer .ae-code pre {white-space: pre-wrap; font-size: 13px}",
        ".ae-explorer .ae-code .ae-mark {background: #FFE9A8; display: inline-block; width: 100%}",
        ".ae-explorer .ae-terms {font-size: 13px; color: #333}",
        "</style>",
    )
)


class PlotlyCode(widgets.Widget):
    """plotly's FigureWidget module (plotly.js inside) as one widget's state, shared by every ``Heatmap``."""

    source = traitlets.Unicode().tag(sync=True)


_shared: PlotlyCode | None = None


def plotly_code() -> PlotlyCode:
    """This kernel's ``PlotlyCode``, made on first use (and again if ``Widget.close_all`` closed it)."""
    global _shared  # one per kernel: what makes the saved notebook and the page hold plotly.js once
    if _shared is None or _shared.comm is None:
        _shared = PlotlyCode(source=str(BaseFigureWidget._esm))  # anywidget has read plotly's file into _esm
    return _shared


class Heatmap(go.FigureWidget):
    """plotly's FigureWidget, whose front end ``heatmap.js`` imports plotly's module from ``PlotlyCode``.

    Give it the figure whole (its size too): until plotly's module has loaded, the front end would miss a change."""

    _esm = Path(__file__).with_name("heatmap.js").read_text(encoding="utf-8")  # installed as package data
    _plotly_code = traitlets.Instance(PlotlyCode).tag(sync=True, **widgets.widget_serialization)
    _plotly_version = traitlets.Unicode(plotly.__version__).tag(sync=True)

    @traitlets.default("_plotly_code")
    def _shared_code(self) -> PlotlyCode:
        return plotly_code()


def markdown(text: str, terms: list[str] | None = None) -> str:
    """The app's Markdown (code, bold, glossary links, backslash escapes) as HTML; each glossary link becomes its
    text, underlined, and its key is added to ``terms`` so the definition can be shown below."""

    def link(match: re.Match) -> str:
        if terms is not None and match.group(2) in TERMS and match.group(2) not in terms:
            terms.append(match.group(2))
        return f"\x00{match.group(1)}\x01"

    out = []
    for k, part in enumerate(_CODE.split(_LINK.sub(link, text))):
        if k % 2:  # inside backticks: shown as it is
            out.append(f"<code>{html.escape(part)}</code>")
        else:
            out.append(_BOLD.sub(r"<b>\1</b>", html.escape(_ESCAPED.sub(r"\1", part), quote=False)))
    return "".join(out).replace("\x00", '<span class="ae-term"><u>').replace("\x01", "</u></span>")


def definitions(keys: list[str]) -> str:
    """The glossary's entries for ``keys``, as a short list."""
    if not keys:
        return ""
    items = "".join(f"<li><b>{markdown(TERMS[k].shown())}</b>: {markdown(TERMS[k].definition)}</li>" for k in keys)
    return f'<ul class="ae-terms">{items}</ul>'


def forward_source(module) -> list[str]:
    """The lines of ``type(module).forward``; none when inspect cannot read them back."""
    try:
        return inspect.getsource(type(module).forward).splitlines()
    except (OSError, TypeError):  # defined where inspect cannot read it back
        return []


class Explorer(widgets.VBox):
    """The stepper: Previous, the stage picker, Next; the batch item and head; a stage's words, heatmaps, the
    clicked cell's explanation and the reader's forward with the stage's lines marked.

    For code and tests: ``stage`` (the current ``Stage``), ``go(key)``, ``next()``, ``previous()``,
    ``select(panel_key, row, col)`` (what a click does), ``explanation`` (the cell panel's text)."""

    def __init__(self, exploration: Exploration):
        self.exploration = data = exploration
        self.item, self.head, self.index = 0, 0, 0
        self.figures: dict[str, Heatmap] = {}
        self.selected: tuple[str, int, int] | None = None
        self._stages = data.stages()
        sizes = data.sizes
        self.previous_button = widgets.Button(description="◂ Previous", layout=widgets.Layout(width="110px"))
        self.next_button = widgets.Button(description="Next ▸", layout=widgets.Layout(width="110px"))
        self.picker = widgets.Dropdown(options=self._options(), value=0, layout=widgets.Layout(width="260px"))
        self.position = widgets.HTML()
        self.position.add_class("ae-step")
        self.item_picker = widgets.Dropdown(
            options=[(f"batch item {b + 1}", b) for b in range(data.batch_size)], value=0, description=""
        )
        self.head_picker = widgets.Dropdown(options=[(f"head {h + 1}", h) for h in range(data.num_heads)], value=0)
        self.item_picker.layout.display = "" if data.batch_size > 1 else "none"
        self.head_picker.layout.display = "none"
        self.text = widgets.HTML()
        self.text.add_class("ae-text")
        self.charts = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        self.charts.add_class("ae-charts")
        self.cell = widgets.HTML(PROMPT)
        self.cell.add_class("ae-explanation")
        self.code = widgets.HTML()
        self.code.add_class("ae-code")
        self.code_box = widgets.Accordion(children=[self.code], titles=("Your forward",))
        self._lines = forward_source(data.module)
        wrapper = sizes.kind == "MultiHeadAttentionWrapper"  # its heads' forward makes every step but the last
        self._head_lines = forward_source(data.module.heads[0]) if wrapper else self._lines
        title = widgets.HTML(
            f"{STYLE}<b>Your {html.escape(type(data.module).__name__)}</b>, read as the book's {sizes.kind}: "
            f"d_in = {sizes.d_in}, d_out = {sizes.d_out}"
            + (f", {sizes.num_heads} heads" if sizes.num_heads > 1 else "")
            + (
                f", context_length = {sizes.context_length}, dropout = {sizes.dropout:g}"
                if sizes.context_length
                else ""
            )
            + f" · {data.x.shape[1]} tokens"
            + ("" if data.training else " · eval mode")
        )
        self.previous_button.on_click(lambda _: self.previous())
        self.next_button.on_click(lambda _: self.next())
        self.picker.observe(lambda change: self._show(change["new"]), names="value")
        self.item_picker.observe(lambda change: self._choose(item=change["new"]), names="value")
        self.head_picker.observe(lambda change: self._choose(head=change["new"]), names="value")
        nav = widgets.HBox([self.previous_button, self.picker, self.next_button, self.position])
        choices = widgets.HBox([self.item_picker, self.head_picker])
        super().__init__([title, nav, choices, self.text, self.charts, self.cell, self.code_box])
        self.add_class("ae-explorer")
        self._show(0)

    # What a learner does.

    @property
    def stage(self) -> Stage:
        return self._stages[self.index]

    @property
    def stage_keys(self) -> list[str]:
        return [stage.key for stage in self._stages]

    def next(self) -> None:
        if self.index + 1 < len(self._stages):
            self.picker.value = self.index + 1

    def previous(self) -> None:
        if self.index > 0:
            self.picker.value = self.index - 1

    def go(self, key: str) -> None:
        """Show the stage named ``key`` ("weights", "mask", …)."""
        if key not in self.stage_keys:
            raise ValueError(f"no stage {key!r}; this module's stages are {', '.join(self.stage_keys)}")
        self.picker.value = self.stage_keys.index(key)

    def select(self, panel_key: str, row: int, col: int) -> None:
        """What a click on cell (``row``, ``col``) of the heatmap ``panel_key`` does (counted from 0)."""
        panel = next((p for p in self.stage.panels if p.key == panel_key), None)
        if panel is None:
            raise ValueError(f"no heatmap {panel_key!r} on this step")
        rows, cols = panel.matrix.shape
        if not (0 <= row < rows and 0 <= col < cols):
            raise ValueError(f"cell ({row}, {col}) is outside the {rows} × {cols} matrix")
        self.selected = (panel_key, row, col)
        words, written = panel.cells.explain(row, col)
        terms: list[str] = []
        body = markdown(words, terms)
        if isinstance(written, str):
            sums = f"<pre>{html.escape(written)}</pre>"
        else:  # (heading, text) pairs: two computations side by side
            sums = "".join(f"<b>{html.escape(h)}</b><pre>{html.escape(t)}</pre>" for h, t in written)
        self.cell.value = f"<div>{body}</div>{sums}{definitions(terms)}"
        for key, figure in self.figures.items():
            spec = {"data": [trace.to_plotly_json() for trace in figure.data]}
            figure.layout.shapes = cell_marks(spec, row=row, col=col) if key == panel_key else ()

    @property
    def explanation(self) -> str:
        """The cell panel's text, without its HTML."""
        return html.unescape(re.sub(r"<[^>]+>", "", self.cell.value))

    # Drawing.

    def _options(self) -> list[tuple[str, int]]:
        return [(f"{k + 1}. {stage.title}", k) for k, stage in enumerate(self._stages)]

    def _choose(self, *, item: int | None = None, head: int | None = None) -> None:
        self.item = self.item if item is None else item
        self.head = self.head if head is None else head
        self._stages = self.exploration.stages(self.item, self.head)
        self._show(self.index)

    def _show(self, index: int) -> None:
        self.index = index
        stage = self.stage
        count = len(self._stages)
        per_head = stage.key not in ("heads", "output") and self.exploration.num_heads > 1
        per_head = per_head and not (stage.key == "projections" and self.exploration.sizes.kind == "MultiHeadAttention")
        self.head_picker.layout.display = "" if per_head else "none"
        warning = f'<div class="ae-warning">{markdown(stage.warning)}</div>' if stage.warning else ""
        self.text.value = f"<div>{markdown(stage.text)}</div>{warning}"
        width = 280 if len(stage.panels) > 1 else 560  # three panels fit one row of a notebook's 850 px
        replaced = self.figures.values()
        self.figures = {panel.key: self._figure(panel, width) for panel in stage.panels}
        self.charts.children = tuple(self.figures.values())
        for figure in replaced:  # never shown again: closed, so neither the page nor a saved notebook keeps them
            figure.close()
        self.selected = None
        self.cell.value = PROMPT
        self.code.value = self._code(stage)
        self.previous_button.disabled = index == 0
        self.next_button.disabled = index == count - 1
        self.position.value = f"Step {index + 1} of {count} · {html.escape(stage.title)}"  # last: the step is drawn

    def _figure(self, panel: Panel, width: int) -> Heatmap:
        pieces = self.exploration.labels[self.item]
        rows, cols = panel.matrix.shape
        figure = heatmap(
            panel.matrix,
            pieces,
            panel.cells.col_labels if panel.col_title != "key" else pieces,
            title=panel.title,
            value_name=panel.value_name,
            meaning=panel.meaning,
            kind=panel.kind,
            masked=panel.masked,
            row_title=panel.row_title,
            col_title=panel.col_title,
            col_tokens=panel.col_title == "key",
            decimals=2 if rows * cols <= 64 else 1,
            pickable=True,
        )
        widget = Heatmap(figure.update_layout(width=width, autosize=False))
        for trace in widget.data:
            if trace.name == PICK_TRACE:
                trace.on_click(self._clicked(panel.key, widget))
        return widget

    def _clicked(self, panel_key: str, widget: Heatmap):
        def clicked(trace, points, state) -> None:
            if self.figures.get(panel_key) is not widget:  # a click on a chart the step has just replaced
                return
            if points.point_inds:
                row, col = (int(v) for v in trace.customdata[points.point_inds[0]][:2])
                self.select(panel_key, row, col)

        return clicked

    def _code(self, stage: Stage) -> str:
        own = stage.key == "heads" or self._head_lines is self._lines
        self.code_box.titles = ("Your forward" if own else "Your heads' forward (each head's CausalAttention)",)
        lines = self._lines if own else self._head_lines
        if not lines:
            return "<i>The forward's source cannot be read back (defined outside a file).</i>"
        shown = []
        for line in lines:
            text = html.escape(line)
            marked = any(pattern in line for pattern in stage.code)
            shown.append(f'<span class="ae-mark">{text}</span>' if marked else text)
        found = any(pattern in "\n".join(lines) for pattern in stage.code)
        note = "" if found else "<i>No line of your forward reads as the book's for this step.</i>"
        return f"<pre>{chr(10).join(shown)}</pre>{note}"

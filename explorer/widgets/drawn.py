"""Figures built once and drawn for every session that shows the same view.

A class mostly steps through the same pages with the same sentence, so most figures a server draws
have been drawn before, for another student or for the same one a step ago. ``shared`` builds a
figure the first time its builder is called with given numbers, labels and style, and hands the same
``Drawn`` to every later call with equal arguments. The key is a digest of the arguments' contents
(``fingerprint``), so it does not matter which session or which cached result they came from.

A shared figure is kept as JSON, and every run that draws it makes its own plotly figure from that, so
no session can change what another sees."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Mapping

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.basedatatypes import BaseFigure

from explorer import figures
from explorer.figures.layout import pandas_settled
from explorer.figures.tables import figure_alt, figure_tables, figure_title, highlighted_rows
from explorer.runtime.caching import MIB, SharedCache

FIGURE_ENTRIES = 512  # figures kept; a class on one sentence draws about 100 different ones
FIGURE_BYTES = 64 * MIB  # the numbers of every kept figure together (the figures hold about as much again)
FIGURE_TTL_S = 600.0
FIGURES = SharedCache(FIGURE_BYTES, FIGURE_BYTES // 8, FIGURE_TTL_S)


class EncodedFigure(BaseFigure):
    """A figure that is only its JSON, for ``st.plotly_chart``.

    ``st.plotly_chart`` asks a plotly figure for its ``to_dict()`` (plotly's
    ``tools.return_figure_from_figure_or_data``) and encodes that. A figure made from JSON first builds
    the JSON into plotly objects, then deep-copies them back into the same dict: 2-8 ms a figure, where
    this one parses the JSON (0.1-0.3 ms). It is nothing else; ``Drawn.figure()`` makes a whole figure.
    """

    def __init__(self, spec: str) -> None:  # BaseFigure.__init__ would build the plotly objects
        self._spec = spec
        self.to_dict = functools.partial(json.loads, spec)  # a new dict at each call: the chart may change it


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A figure ready to draw, kept as its JSON, with its numbers for the downloads (``figure_tables``).

    Kept as text, a figure costs Python's garbage collector nothing: as plotly objects, 500 kept figures
    added 54 ms to the full collection Streamlit runs after every script run.
    """

    spec: str  # plotly's JSON of the figure
    tables: tuple[dict, ...]
    title: str
    chart: EncodedFigure  # the figure for ``st.plotly_chart``, without plotly objects; shared, it holds only ``spec``
    alt: str = ""  # its text alternative for screen readers (``figures.tables.figure_alt``)
    readable_width: int = 0  # the width its cell texts need (``figures.readable_width``); a phone scrolls to it

    def figure(self) -> go.Figure:
        """A new plotly figure made from the JSON, for one run to draw (about 1 ms: not validated again)."""
        pandas_settled()
        return go.Figure(json.loads(self.spec), _validate=False)


def _frozen(value):
    """Arrays read-only and lists as tuples: what a table keeps is read by every session and written by none."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
        return value
    if isinstance(value, list):
        return tuple(value)
    return value


def prepare(fig, *, cell_text: bool = True) -> Drawn:
    """``fig`` (without the numbers printed in its cells unless ``cell_text``) as JSON, with its export tables."""
    pandas_settled()
    fig = fig if cell_text else figures.without_cell_text(fig)
    tables = tuple({name: _frozen(value) for name, value in table.items()} for table in figure_tables(fig))
    spec = pio.to_json(fig, validate=False)
    title = figure_title(fig)
    alt = figure_alt(title, tables, highlighted_rows(fig))
    return Drawn(spec, tables, title, EncodedFigure(spec), alt, figures.readable_width(fig))


class UnhashableError(TypeError):
    """An argument ``fingerprint`` cannot digest: the figure is built for this call alone."""


def _feed(digest, value) -> None:
    """Add ``value``'s type and contents to ``digest``."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        digest.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        digest.update(f"array:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.data if array.dtype != object else repr(array.tolist()).encode())
    elif isinstance(value, np.generic):
        _feed(digest, value.item())
    elif isinstance(value, list | tuple) and all(type(item) is str for item in value):  # labels: one update
        digest.update(f"{type(value).__name__}-str:{value!r};".encode())
    elif isinstance(value, list | tuple | range):
        digest.update(f"{type(value).__name__}:{len(value)}[".encode())
        for item in value:
            _feed(digest, item)
        digest.update(b"]")
    elif isinstance(value, Mapping):
        digest.update(f"map:{len(value)}{{".encode())
        for key, item in value.items():
            _feed(digest, key)
            _feed(digest, item)
        digest.update(b"}")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        digest.update(f"{type(value).__qualname__}(".encode())
        for field in dataclasses.fields(value):
            _feed(digest, field.name)
            _feed(digest, getattr(value, field.name))
        digest.update(b")")
    elif callable(value) and hasattr(value, "__qualname__"):
        digest.update(f"callable:{value.__module__}.{value.__qualname__};".encode())
    else:
        raise UnhashableError(f"cannot fingerprint a {type(value).__name__}")


def fingerprint(*values) -> str:
    """A digest of ``values``' contents: equal for equal numbers, labels and options, whatever their origin."""
    digest = hashlib.sha256()  # 2-3 times blake2b's speed here (SHA extensions): 4 MiB of weights in about 1 ms
    for value in values:
        _feed(digest, value)
    return digest.hexdigest()


def shared(builder: Callable, *args, cell_text: bool = True, **options) -> Drawn:
    """``prepare(builder(*args, **options), cell_text=cell_text)``, built once for every equal call."""
    try:
        key = ("figure", fingerprint(builder, args, options, cell_text))
    except UnhashableError:
        return prepare(builder(*args, **options), cell_text=cell_text)
    drawn = FIGURES.get(key)
    if drawn is None:
        drawn = prepare(builder(*args, **options), cell_text=cell_text)
        FIGURES.put(key, drawn, FIGURE_ENTRIES)
    return drawn

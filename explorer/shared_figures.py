"""Figures built once and drawn for every session that shows the same view.

A class mostly steps through the same pages with the same sentence, so most figures a server draws
have been drawn before, for another student or for the same one a step ago. ``shared`` builds a
figure the first time its builder is called with given numbers, labels and style, and hands the same
``Drawn`` to every later call with equal arguments. The key is a digest of the arguments' contents
(``fingerprint``), so it does not matter which session or which cached result they came from.

A shared figure is read by many threads at once: nobody may change it. ``ui.draw`` draws it as it
is; code that wants to change a figure builds its own (``ui.chart``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping

import numpy as np

from . import exports, figures
from .caching import MIB, SharedCache

FIGURE_ENTRIES = 512  # figures kept; a class on one sentence draws about 100 different ones
FIGURE_BYTES = 64 * MIB  # the numbers of every kept figure together (the figures hold about as much again)
FIGURE_TTL_S = 600.0
FIGURES = SharedCache(FIGURE_BYTES, FIGURE_BYTES // 8, FIGURE_TTL_S)


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A figure ready to draw, with its numbers for the downloads (``exports.figure_tables``)."""

    figure: object  # a plotly Figure, shared: never change it
    tables: tuple[dict, ...]
    title: str


def prepare(fig, *, cell_text: bool = True) -> Drawn:
    """``fig`` (without the numbers printed in its cells unless ``cell_text``) with its export tables."""
    fig = fig if cell_text else figures.without_cell_text(fig)
    tables = tuple(exports.figure_tables(fig))
    for table in tables:
        for value in table.values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
    return Drawn(fig, tables, exports.figure_title(fig))


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
    digest = hashlib.blake2b(digest_size=20)
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

"""The shape of every tensor a method makes, line by line, recorded from a real run.

The Multi-head page's shape table comes from here: each row pairs a line of the package's
source (read with ``inspect``) with the shape its tensor had when the line ran, so the table
cannot drift from the code."""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
import textwrap
import threading

from explorer.results import ShapeRow
from explorer.runtime import torch

SHAPE_COMMENT = re.compile(r"\([\w, *]*\)")  # "(b, num_tokens, d_out)" in a comment
# On Python 3.11, two threads in ``ast.parse`` at once can fail ("AST constructor recursion depth mismatch"),
# as 4 of 1,766 new sentences did under 30 students typing: the app parses its sources one thread at a time.
PARSING = threading.Lock()


@functools.cache  # a function's source, read once per process
def _source(obj) -> str:
    return inspect.getsource(obj)


def source_of(obj) -> str:
    """``inspect.getsource(obj)``, read once per process and by one thread at a time (``PARSING``): for a
    class, ``getsource`` parses its whole module with ``ast.parse``."""
    with PARSING:
        return _source(obj)


@functools.cache  # a function's statements, parsed once per process
def _parsed(function) -> dict[int, tuple[str, str]]:
    return _parse_statements(function)


def _statements(function) -> dict[int, tuple[str, str]]:
    """``_parse_statements(function)``, once per process and by one thread at a time (``PARSING``)."""
    with PARSING:
        return _parsed(function)


def _parse_statements(function) -> dict[int, tuple[str, str]]:
    """Each source line number of ``function`` → its statement's code (comment removed) and shape comment."""
    lines, first = inspect.getsourcelines(function)
    source = textwrap.dedent("".join(lines))
    numbered = source.splitlines()
    found = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt) or isinstance(node, ast.FunctionDef):
            continue
        code = ast.get_source_segment(source, node) or ""
        comment = numbered[node.end_lineno - 1].partition("#")[2]
        shapes = SHAPE_COMMENT.findall(comment)
        for number in range(node.lineno, node.end_lineno + 1):
            found[number + first - 1] = (" ".join(code.split()), shapes[-1] if shapes else "")
    return found


def line_shapes(function, *args, **kwargs) -> tuple[ShapeRow, ...]:
    """Call ``function(*args, **kwargs)`` and record, after each of its statements, the shape of
    every tensor that statement bound to a local name. In-place changes add no row."""
    statements = _statements(function)
    code = inspect.unwrap(function).__code__
    rows: list[ShapeRow] = []
    seen: dict[str, torch.Tensor] = {}
    running = [None]  # the statement whose effects are recorded at the next event

    def record(frame) -> None:
        for name, value in frame.f_locals.items():
            if isinstance(value, torch.Tensor) and seen.get(name) is not value:
                seen[name] = value
                if running[0] is not None:
                    line, names = statements[running[0]]
                    rows.append(ShapeRow(line=line, names=names, shape=tuple(value.shape)))

    def in_function(frame, event, arg):
        if event in ("line", "return"):
            record(frame)
            statement = statements.get(frame.f_lineno)
            running[0] = frame.f_lineno if statement else None
        return in_function

    def on_call(frame, event, arg):
        return in_function if frame.f_code is code else None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        with torch.no_grad():
            function(*args, **kwargs)
    finally:
        sys.settrace(previous)
    return tuple(rows)

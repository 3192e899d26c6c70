"""For the reader's notebook: ``explore(module, inputs)`` steps through a chapter-3 module's stages with the app's
figures and cell explanations, and ``check(module)`` says whether a class typed from the book is right.

``from attention.notebook import explore, check``, then ``explore(ca, inputs)`` shows the stepper inline
(JupyterLab, Notebook 7, VS Code), and ``print(check(ca))`` puts the reader's ``CausalAttention`` (or v1,
v2, the wrapper, ``MultiHeadAttention``) beside the package's, stage by stage. ``check`` needs only torch;
``explore`` needs the notebook extra (``pip install ".[notebook]"``: ipywidgets, anywidget, plotly) and
draws and writes with what the app does too, the package's ``attention.figures`` and ``attention.prose``;
nothing of the app's ``explorer``, nor Streamlit. ``import attention`` imports neither.

- ``reading``: which class the reader wrote, its sizes, and its forward traced with hooks;
- ``precision``: how far rounding lets two correct passes drift, stage by stage;
- ``matching``: the catalogue's mistakes run on the reader's weights;
- ``checking``: ``check`` and its result, ``Check``;
- ``exploring``: the stages ``explore`` shows, from the reader's own tensors;
- ``widget``: the stepper, ipywidgets around plotly's ``FigureWidget``.
"""

from __future__ import annotations

from .checking import Check, check

NOTEBOOK_EXTRA = 'pip install "attention-explorer[notebook]"  (from the repository: pip install ".[notebook]")'
_NEEDED = ("ipywidgets", "anywidget", "plotly")


def explore(module, inputs, tokens=None):
    """The app's stepper for ``module``, inline in the notebook: its stages, heatmaps and cell explanations.

    ``module`` is one of chapter 3's classes, the package's or your own typed from the book (found by the
    book's attribute names); ``inputs`` a tensor as the book passes it, (num_tokens, d_in) or a batch, or a
    sentence, which GPT-2's BPE splits and the Tokens page's embeddings turn into vectors; ``tokens`` labels
    the rows. Your forward runs once, traced with hooks; your code and weights stay as they were.
    Returns the ``Explorer`` widget (the notebook shows it)."""
    missing = [name for name in _NEEDED if not _installed(name)]
    if missing:
        raise ImportError(f"explore() needs {', '.join(missing)}, the notebook extra: {NOTEBOOK_EXTRA}")
    from .exploring import Exploration, ExploreError
    from .widget import Explorer

    try:
        exploration = Exploration(module, inputs, tokens)
    except ExploreError as error:
        raise ExploreError(str(error)) from None  # said for a learner: no traceback from inside the package
    return Explorer(exploration)


def _installed(name: str) -> bool:
    import importlib

    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


__all__ = ["Check", "check", "explore"]

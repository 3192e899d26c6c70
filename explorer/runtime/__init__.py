"""The runtime layer: what the server process needs whatever page it draws. This module holds ``torch``,
imported on first use (below); then ``memory`` (a view's bytes before it is computed, heavy work taking
turns, and results shared read-only by every session), ``patches`` (every use of Streamlit's private names)
and ``server`` (a fast first page, then torch, and the process tuned for a classroom).

It may import the bottom modules (``settings`` and the others), never ``models`` or above.
"""

from __future__ import annotations

import importlib
import sys

# ``torch`` for the explorer's modules, imported the first time one of them uses it.
#
# A server draws its first page before it has imported torch (``runtime.server``; BENCHMARKS.md, "Cost per
# action and first paint"), so the modules that page imports do not import torch when they load:
# they take ``torch`` from here, and ``torch.tensor(...)`` in a function imports torch then, once
# per process. The ``attention`` package loads its submodules on first use in the same way.


class LazyModule:
    """A stand-in for the module ``name`` that imports it at the first attribute read."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        # import_module, not sys.modules: while another thread imports the module, this waits for it to finish
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def loaded(name: str):
    """The module ``name`` if it is imported and initialized, else None; never imports it (nor waits)."""
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


torch = LazyModule("torch")

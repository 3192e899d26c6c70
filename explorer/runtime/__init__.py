"""The runtime layer, what the server needs whatever page it draws: ``memory`` (budgets, turns, the shared cache),
``patches`` (Streamlit's private names) and ``server`` (a fast first page, then torch). It may import the bottom
modules (``settings`` and the others), never ``models`` or above.
"""

from __future__ import annotations

import importlib
import sys


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


# A server draws its first page before importing torch (``runtime.server``), so the modules that page imports take
# ``torch`` from here: ``torch.tensor(...)`` in a function imports it then, once per process.
torch = LazyModule("torch")

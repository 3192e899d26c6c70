"""Process-wide settings for a server shared by a classroom, made once by ``configure_server``.

Nothing here happens on import: the entry script calls ``configure_server()``, and tests that
need the tuning call it themselves (BENCHMARKS.md, "Where the time goes", has the measurements).
"""

from __future__ import annotations

import gc
import threading

import pandas  # noqa: F401  Streamlit imports it for a page's first table; here, so that the freeze covers it
import plotly.graph_objects  # noqa: F401  the figure builders' import, frozen with the others
import torch

MACHINE_THREADS = torch.get_num_threads()  # what torch would use; the Speed page measures with all of them
_configured = threading.Event()
_configure_lock = threading.Lock()


def configure_server() -> None:
    """Tune this process for many sessions at once; later calls do nothing.

    * One torch thread per script run: sessions already run side by side on their own
      threads, and two intra-op threads per run on a busy 2-core server made Why attention
      at T = 1,024 take 3.1-10.9 s instead of 1.2-1.4 s. torch reads this when each new
      script thread first computes.
    * Streamlit runs a full ``gc.collect()`` after every script run (runner.postScriptGC).
      Freezing the objects that importing torch, plotly and pandas made leaves that
      collection only what runs create: 124-212 ms -> 13-17 ms per rerun.
    """
    with _configure_lock:
        if _configured.is_set():
            return
        torch.set_num_threads(1)
        gc.collect()
        gc.freeze()
        _configured.set()

"""The runtime layer: what the server process needs whatever page it draws. ``lazy`` (torch imported on
first use), ``caching`` (results shared read-only by every session), ``memory`` (a view's bytes before it
is computed), ``queue`` (heavy work taking turns), ``patches`` (every change to Streamlit's internals),
``first_paint`` and ``server`` (a fast first page, then torch, and the process tuned for a classroom).

It may import the bottom modules (``settings``, ``parsing``, ``results``), never ``models`` or above."""

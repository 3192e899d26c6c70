"""The app's glue around the ``attention`` package: settings, caching, views, session state and widgets.
No attention math lives here; it calls the package.

The sub-packages are layers. A module imports only its own layer and the layers below it, never one above
(``tests/test_architecture.py`` checks this, imports inside functions included, and that nothing imports
in a cycle). From the top:

* ``pages/`` (outside this package) and ``explorer_app.py``: each page reads its ``Run``, calls a view,
  and draws it with widgets and figures.
* ``widgets`` and ``room``, one layer. ``widgets``: Streamlit's pieces: the sidebar, the stepper, charts with
  their downloads, the code panel, questions, captions, the one stylesheet. ``room``: the live room whole: its
  store (in memory, or Redis across processes), the wake-up of following students, a session's part in a room
  (joining, the teacher's publication, a student's arrival, votes) and the room on screen. The stepper and the
  questions ask the room; the room's vote chart takes the charts' style.
* ``session``: one visitor's settings in session state and the URL, the ``Run`` made from them, the state a
  page keeps, the link.
* ``views``: what a page computes (``views.Run``, budgeted once), as frozen results shared by sessions, each
  result's dataclass beside its view.
* ``models``: the Weights setting's one place: the chapter's random weights or a trained model's layer,
  the sentence prepared for them, the modules built from them.
* ``runtime``: the server process: lazy torch, memory estimates, one queue, the shared cache, every use of
  Streamlit's private names, the first paint.
* At the bottom, importing none of the above: ``settings`` (validated settings, what a link sent) and
  ``page_text`` (the words of pages with long text, the questions built from measured numbers).

Every layer may import the ``attention`` package, which imports nothing of the app. What the notebook's
``explore`` shows too lives there: ``attention.figures`` (pure figure builders) and ``attention.prose`` (what
a heatmap's cells are, with their words; the glossary; the one Markdown escaper).

A command-line tool lives in ``scripts/``; measurements live in ``benchmarks/``.
"""

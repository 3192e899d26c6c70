"""How many explorer functions one action enters on the server, counted with a profiler (issue 23).

``python -m benchmarks.hops`` opens the Causal mask page in ``AppTest`` and counts, with
``sys.setprofile``, the distinct functions of ``explorer/`` entered by:

* a Next click with the view and its figures cached (Next, Next, Previous first), counting only what runs
  inside the page's fragment, which is what a Next click reruns on a real server;
* a new sentence typed in the sidebar, the whole run.

It prints each count, the files they sit in, and how often the sentence was prepared (``--list`` names
every function). Run it from the repository root; the numbers depend on the code, not on the machine.
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading

import pandas  # noqa: F401 (the server imports it after its first page, ``runtime.server.warm_up``; so does this)

from benchmarks.launch import ROOT

sys.path.insert(0, str(ROOT / "tests"))
from apptest_support import app, next_step, previous_step, stepper_button

SENTENCE = "The quick brown fox jumps over the lazy dog again and again, said the teacher today"


def entered(run, *, fragment_only: bool) -> collections.Counter:
    """Each ``explorer/`` function ``run()`` enters, with its number of calls; with ``fragment_only``, only
    those inside the app script's ``show_page`` fragment."""
    counts, depth = collections.Counter(), [0]

    def profile(frame, event, arg):
        code = frame.f_code
        fragment = code.co_name == "show_page" and code.co_filename.endswith("explorer_app.py")
        if event == "call":
            depth[0] += fragment
            inside = depth[0] or not fragment_only
            if inside and "/explorer/" in code.co_filename and not code.co_name.startswith("<"):
                counts[(code.co_filename.split("/explorer/", 1)[1], code.co_name)] += 1
        elif event == "return" and fragment:
            depth[0] -= 1

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run()
    finally:
        threading.setprofile(None)
        sys.setprofile(None)
    return counts


def report(name: str, counts: collections.Counter, listed: bool) -> None:
    files = {file for file, _ in counts}
    prepared = sum(n for (file, function), n in counts.items() if file.endswith("inputs.py") and function == "prepared")
    print(f"{name}: {len(counts)} distinct explorer functions in {len(files)} files, {sum(counts.values())} calls; "
          f"inputs.prepared called {prepared} times")  # fmt: skip
    for (file, function), calls in sorted(counts.items()) if listed else ():
        print(f"  {calls:4d}  {file}  {function}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="name every function entered")
    args = parser.parse_args(argv)
    at = app("pages/causal_mask.py")
    next_step(at)
    next_step(at)
    previous_step(at)
    stepper_button(at, "next").click()
    report("Next click, view and figures cached (the fragment)", entered(at.run, fragment_only=True), args.list)
    at.radio(key="w_source").set_value("text").run()
    counts = entered(at.text_input(key="w_text").input(SENTENCE).run, fragment_only=False)
    report("New sentence (the whole run)", counts, args.list)


if __name__ == "__main__":
    main()

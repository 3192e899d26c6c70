"""Attention Explorer's benchmarks, run from the repository root as ``python -m benchmarks.<name> ...``.

Commands: ``load`` (many students on one server or several), ``app_scale`` (a rerun at T = 6 … 1,024),
``actions`` (the cost of each action, first paint), ``hostile`` (hostile links) and ``bench_attention``
(the Speed page's harness at any size). Tools whose results are now records in BENCHMARKS.md (the
issue-13 load scenarios, ``streamlit_lock_growth``, profiling) are at commit e1b2501.

What they share, one module each: ``protocol`` (the websocket client a simulated student is),
``launch`` (the app's server and Chromium), ``serve`` (the server's run timings and memory log),
``meter`` (latency statistics, CPU and memory over a run), ``report`` (results files and Markdown
tables), ``machine`` (the machine's facts, load average and /proc readings), ``sentences`` (the
sentences students type) and ``browser`` (the clocks read in Chromium). ``bare_app`` and
``shell_app`` are the two Streamlit scripts ``app_scale`` compares the pages with.
"""

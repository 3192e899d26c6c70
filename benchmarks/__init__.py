"""Attention Explorer's benchmarks, run from the repository root as ``python -m benchmarks.<name> ...``: ``load``,
``app_scale``, ``actions``, ``hostile``, ``bench_attention`` and ``generation``; each module's docstring says what
it measures and BENCHMARKS.md how. The rest is shared: ``protocol`` (a simulated student and what it types),
``launch`` (servers, Chromium and the clocks read in it), ``serve`` (run timings, memory log), ``meter`` (the
machine, its load, statistics), ``report``, and ``bare_app`` and ``shell_app``, the scripts ``app_scale`` compares
the pages with. Retired tools are at commit e1b2501.
"""

"""Attention Explorer's benchmarks, run from the repository root as ``python -m benchmarks.<name> ...``.

Commands: ``load``, ``app_scale``, ``actions`` (with its cell selection, grid of every layer and head, and
functions entered), ``hostile``, ``bench_attention`` and ``generation``; each module's docstring says what it
measures and BENCHMARKS.md how. The others are what they share: ``protocol`` (a simulated student's websocket client),
``launch`` (servers and Chromium), ``serve`` (run timings and memory log), ``meter``, ``report``, ``machine``,
``sentences``, ``browser`` (clocks read in Chromium), and ``bare_app`` and ``shell_app``, the scripts
``app_scale`` compares the pages with. Retired tools are at commit e1b2501.
"""

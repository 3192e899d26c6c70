"""The app at GPT-2 scale: server time, bytes and browser paint time of a rerun, at T = 6 … 1,024 tokens.

Usage, from the repository root (the "App at scale" section of BENCHMARKS.md, which describes the method)::

    python -m benchmarks.app_scale                               # everything, about 15 minutes on 2 cores
    python -m benchmarks.app_scale --pages causal_mask,multihead --sizes 64,1024 --no-browser --no-cold
    python -m benchmarks.app_scale report                        # the tables again, from the saved results

The phases (``server_phase``, ``browser_phase``, ``cold_start_phase``, ``import_phase``) keep their results in
``artifacts/app_scale/results.json`` (updated, not replaced); the tables replace BENCHMARKS.md's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

from benchmarks import report
from benchmarks.launch import ROOT, TIKTOKEN_CACHE, BrowserTab, TimedServer, chromium, cold_start
from benchmarks.meter import loadavg, machine, median
from benchmarks.protocol import Sentences, Student, link_text, open_typed, warm

ARTIFACTS = ROOT / "artifacts" / "app_scale"
RESULTS, MARKDOWN = ARTIFACTS / "results.json", ROOT / "BENCHMARKS.md"
TABLES = "<!-- app-scale:tables:start -->", "<!-- app-scale:tables:end -->"
SIZES, BROWSER_SIZES = (6, 64, 256, 1024), (64, 1024)
PAGE_ALIASES = {"default": "", "why_attention": "", "": ""}
IMPORTS = {"attention_s": "attention", "explorer_compute_s": "explorer.views", "streamlit_s": "streamlit"}


def shell_script() -> str:
    """``shell_app.py`` copied beside a link to the app's ``pages/``, which the shell's ``st.Page`` paths are
    relative to (Streamlit resolves them from the main script's folder)."""
    folder = ARTIFACTS / "shell"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pages").unlink(missing_ok=True)
    (folder / "pages").symlink_to(ROOT / "pages")
    shutil.copy(ROOT / "benchmarks" / "shell_app.py", folder / "shell_app.py")
    return str(folder / "shell_app.py")


async def measure(server: TimedServer, page: str, step: int, num_tokens: int, repeats: int, sentences) -> dict:
    """A fresh session on ``page`` at ``step``, opened from a link with a sentence of ``num_tokens`` tokens, then
    ``repeats`` sentence changes, each a new sentence of ``num_tokens`` tokens, timed."""
    student = await open_typed(Student(server.base), page, num_tokens, sentences, step=str(step))
    rows = []
    try:
        for _ in range(repeats):
            text = sentences.make(num_tokens)
            run, timing, load = await server.timed_send(student, "edit", student.message(text=text), text)
            seconds = {"script": timing["script_s"], "client": run.latency, "gc": timing["after_s"]}
            seconds["total"] = timing["total_s"]
            rows.append({**seconds, "bytes": run.bytes, "charts": run.charts, "load": load, "error": run.error})
    finally:
        await student.close()
    ok = [r for r in rows if not r["error"]]
    out = {"steps": student.steps or 1}
    out |= {f"{key}_ms": median(1000 * r[key] for r in ok) for key in ("script", "client", "gc", "total")}
    out |= {"bytes": median(r["bytes"] for r in ok), "bytes_max": max((r["bytes"] for r in ok), default=float("nan"))}
    out |= {"charts": max((r["charts"] for r in rows), default=0), "load": [r["load"] for r in rows]}
    out["errors"] = [r["error"] for r in rows if r["error"]]
    return out | {"samples_ms": [round(1000 * r["script"], 1) for r in rows]}


async def server_phase(args, app: TimedServer, baselines: dict, pages: list[str], results: dict) -> None:
    sentences, started = Sentences(seed=args.seed), time.time()
    print(f"warming up (load {loadavg()[0]:.2f})", flush=True)
    for server in baselines.values():  # first-call costs behind us: the bare and shell pages, every step of the app
        await warm(server.base, [""], make=lambda: sentences.make(64))
    _, _, steps = await warm(app.base, pages, every_step=True, make=lambda: sentences.make(64))
    titles = dict(app.pages)
    for num_tokens in args.sizes:
        baseline = {"bare": [], "shell": []}
        for page in pages:
            for name, server in baselines.items():
                baseline[name].append(await measure(server, "", 1, num_tokens, args.repeats, sentences))
            wanted = range(1, steps[page] + 1) if args.steps == "all" else [int(s) for s in args.steps.split(",")]
            for step in [s for s in wanted if 1 <= s <= steps[page]]:
                row = await measure(app, page, step, num_tokens, args.repeats, sentences)
                bare_ms, bare_total = (median(r[key] for r in baseline["bare"]) for key in ("script_ms", "total_ms"))
                row.update(page=page, title=titles.get(page, page), step=step, steps=steps[page], T=num_tokens)
                row.update(bare_ms=bare_ms, ratio=row["script_ms"] / bare_ms, total_ratio=row["total_ms"] / bare_total)
                row["when"] = time.strftime("%Y-%m-%d %H:%M")
                results["server"][f"{page}|{step}|{num_tokens}"] = row
                where = f"T={num_tokens:5d} {page or '(default)':12s} step {step}/{steps[page]}"
                print(f"  {where}: {row['script_ms']:7.1f} ms ({row['ratio']:4.1f}x)", row["errors"] or "", flush=True)
        for name, rows in baseline.items():
            medians = {key: median(r[key] for r in rows) for key in ("script_ms", "total_ms", "gc_ms", "bytes")}
            load = [v for r in rows for v in r["load"]]
            results["baseline"][f"{name}|{num_tokens}"] = {"name": name, "T": num_tokens, **medians, "load": load}
    out = {"started": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)), "minutes": (time.time() - started) / 60}
    problems = [p for server in (app, *baselines.values()) for p in server.log_problems()[:10]]
    results["server_run"] = out | {"repeats": args.repeats, "problems": problems}


def heaviest_steps(results: dict, pages: list[str]) -> dict[str, int]:
    """Each page's step with the most bytes per rerun at the largest T measured, among the steps that draw a
    chart if any does (step 1 if the page was not measured)."""
    chosen = {}
    for page in pages:
        rows = [r for r in results["server"].values() if r["page"] == page]
        if not rows:
            chosen[page] = 1
            continue
        largest = [r for r in rows if r["T"] == max(r["T"] for r in rows)]
        drawn = [r for r in largest if r.get("charts", 0)] or largest
        chosen[page] = max(drawn, key=lambda r: r["bytes"])["step"]
    return chosen


def browser_phase(args, app: TimedServer, pages: list[str], results: dict) -> None:
    sentences, chosen = Sentences(seed=args.seed + 1), heaviest_steps(results, pages)
    with chromium() as browser:
        for page in pages:
            for num_tokens in BROWSER_SIZES:
                step, tab = chosen[page], BrowserTab(browser, app.base)
                try:
                    shown, _ = link_text(sentences.make(num_tokens))
                    tab.open(page, {"input": "text", "text": shown, "step": str(step)})
                    tab.type_sentence(sentences.make(num_tokens))  # warm: the slider and figures exist
                    runs = [tab.type_sentence(sentences.make(num_tokens)) for _ in range(args.repeats)]
                finally:
                    tab.close()
                keys = ("painted_ms", "finished_ms", "settled_ms", "received_bytes")
                row = {"page": page, "step": step, "T": num_tokens, **{k: median(r[k] for r in runs) for k in keys}}
                row |= {"plots": runs[-1]["plots"], "samples_ms": [round(r["painted_ms"]) for r in runs]}
                row |= {"load": [r["load"] for r in runs], "when": time.strftime("%Y-%m-%d %H:%M")}
                results["browser"][f"{page}|{step}|{num_tokens}"] = row
                print(f"  browser T={num_tokens:5d} {page or '(default)':12s}: {row['painted_ms']:7.0f} ms", flush=True)


def cold_start_phase(args, results: dict) -> None:
    """Median seconds from ``streamlit run`` to health and to the first painted heatmap, at two URLs."""
    rows = {}
    with chromium() as browser:
        for url in ("/", "/tokens?step=2"):
            samples = []
            for _ in range(args.repeats):
                samples.append(cold_start(browser, ARTIFACTS / "cold.log", url))
                print(f"  cold start {url}: first heatmap painted {samples[-1]['painted_s']:.1f} s", flush=True)
            rows[url] = {key: median(s[key] for s in samples) for key in ("healthy_s", "painted_s")}
            rows[url]["samples_s"] = [round(s["painted_s"], 1) for s in samples]
            rows[url]["load"] = [s["load"] for s in samples]
    results["cold"] = {"rows": rows, "when": time.strftime("%Y-%m-%d %H:%M"), "repeats": args.repeats}


def import_phase(results: dict, repeats: int = 3) -> None:
    """``python -X importtime -c "import attention"`` (largest costs) and the time to import explorer.views."""
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": os.environ.get("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))}
    command = [sys.executable, "-X", "importtime", "-c", "import attention"]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stderr
    found = (re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line) for line in out.splitlines())
    entries = [(int(m[1]), int(m[2]), (len(m[3]) - 1) // 2, m[4]) for m in found if m]
    top_level = sorted((e for e in entries if e[2] == 1), key=lambda e: -e[1])[:8]  # what attention imports
    imports = {"importtime_total_ms": sum(e[1] for e in entries if e[2] == 0) / 1000}
    imports["top_level"] = [{"module": e[3], "cumulative_ms": e[1] / 1000, "self_ms": e[0] / 1000} for e in top_level]
    imports["by_self"] = [{"module": e[3], "self_ms": e[0] / 1000} for e in sorted(entries, key=lambda e: -e[0])[:8]]

    def timed(code: str) -> list[float]:
        values = []
        for _ in range(repeats):
            program = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
            run = subprocess.run([sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True)
            values.append(float(run.stdout.strip().splitlines()[-1]))
        return values

    imports |= {key: timed(f"import {module}") for key, module in IMPORTS.items()}
    results["imports"] = imports | {"load": loadavg()}


def load_results() -> dict:
    empty = {"server": {}, "baseline": {}, "browser": {}}
    return {**empty, **(json.loads(RESULTS.read_text()) if RESULTS.exists() else {})}


def save_results(results: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, default=float))


def run_all(args) -> None:
    results = load_results()
    results["machine"] = machine()
    results.setdefault("phases", {})
    command = " ".join(["python", "-m", "benchmarks.app_scale", *sys.argv[1:]])

    @contextlib.contextmanager
    def phase(name: str):
        entry = {"command": command, "when": time.strftime("%Y-%m-%d %H:%M"), "load_start": loadavg()}
        print(f"{name} (load {entry['load_start'][0]:.2f})", flush=True)
        yield
        results["phases"][name] = {**entry, "load_end": loadavg()}
        save_results(results)

    print(f"machine: {results['machine']}", flush=True)
    wanted = [PAGE_ALIASES.get(p, p) for p in args.pages.split(",")] if args.pages else None
    app = TimedServer("streamlit_app.py", "app", ARTIFACTS)
    scripts = {"bare": "benchmarks/bare_app.py", "shell": shell_script()}
    baselines = {name: TimedServer(script, name, ARTIFACTS) for name, script in scripts.items()}
    try:
        app.start()
        pages = [p for p in asyncio.run(discover_pages(app)) if wanted is None or p in wanted]
        for server in baselines.values():
            server.start()
        with phase("server time and bytes"):
            asyncio.run(server_phase(args, app, baselines, pages, results))
        for server in baselines.values():
            server.stop()
        if not args.no_browser:
            with phase("Enter to painted"):
                browser_phase(args, app, pages, results)
    finally:
        app.stop()
        for server in baselines.values():
            server.stop()
    if not args.no_cold:
        with phase("cold start and imports"):
            cold_start_phase(args, results)
            import_phase(results)
    save_results(results)
    finish(results, args)


async def discover_pages(app: TimedServer) -> list[str]:
    student = Student(app.base)
    await student.visit("", {})
    await student.close()
    app.pages = student.app_pages
    return [path for path, _ in student.app_pages]


def finish(results: dict, args) -> None:
    tables = report.app_scale_tables(results)
    print(tables)
    if not args.no_markdown:
        report.replace_block(MARKDOWN, *TABLES, tables)
        print(f"updated {MARKDOWN}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=("run", "report"))
    parser.add_argument("--pages", help="comma-separated URL paths (default/why_attention for the first page)")
    parser.add_argument("--sizes", type=lambda t: [int(v) for v in t.split(",")], default=SIZES, help="token counts T")
    parser.add_argument("--steps", default="all", help="'all' or comma-separated step numbers")
    parser.add_argument("--repeats", type=int, default=3, help="sentence changes per page, step and T; cold starts")
    parser.add_argument("--no-browser", action="store_true", help="skip Enter-to-painted in Chromium")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold start and import times")
    parser.add_argument("--no-markdown", action="store_true", help="print the tables, leave BENCHMARKS.md as it is")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.command == "report":
        finish(load_results(), args)
    else:
        run_all(args)


if __name__ == "__main__":
    main(sys.argv[1:])

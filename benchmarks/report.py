"""The report: results files, and the Markdown tables BENCHMARKS.md shows between generated markers."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from benchmarks.meter import median

BYTES_GOAL, GOALS = 2 * 10**6, {"small": 1.5, "large": 3.0, "paint": 3.0}


def record(entry: dict, path: str) -> None:
    """Append ``entry`` as one JSON line to ``path``."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def replace_block(path: str, begin: str, end: str, text: str) -> None:
    """Replace what lies between the markers ``begin`` and ``end`` in ``path``; the rest of the file stays."""
    whole = Path(path).read_text()
    if begin not in whole or end not in whole:
        raise SystemExit(f"{path} has no {begin} ... {end} block to fill")
    head, rest = whole.split(begin, 1)
    _, tail = rest.split(end, 1)
    Path(path).write_text(f"{head}{begin}\n{text}\n{end}{tail}")


def row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def table(intro: str, header: str, align: str, rows: list[str]) -> list[str]:
    """``intro``, then a Markdown table: ``header``'s cells are joined by `` | ``; ``align`` is one column's
    (``---``, ``---:``) or every column's, joined by ``|``."""
    columns = header.split(" | ")
    aligns = align.split("|") if "|" in align else [align] * len(columns)
    return [intro, "", row(*columns), row(*aligns), *rows, ""]


def _fmt_ms(value: float) -> str:
    return "–" if value != value else (f"{value:,.0f}" if value >= 100 else f"{value:.1f}")


def _load(values) -> str:
    known = [v for v in values if v == v]  # NaN is not
    low, high = min(known, default=None), max(known, default=None)
    return "–" if low is None else f"{low:.1f}" if high - low < 0.05 else f"{low:.1f}–{high:.1f}"


def _page_name(page: str) -> str:
    return f"`{page}`" if page else "default (`why_attention`)"


MEANS = {"mean_ratio": "ratio", "mean_ms": "script_ms"}  # page_summary's means over steps, of each row's field


def page_summary(results: dict) -> list[dict]:
    """Per page and T: the worst step and the mean over steps of the rerun time and its ratio to the bare page."""
    by_page: dict[str, dict[int, list[dict]]] = {}
    for row in results["server"].values():
        by_page.setdefault(row["page"], {}).setdefault(row["T"], []).append(row)
    summary = []
    for page, sizes in by_page.items():
        for num_tokens, rows in sorted(sizes.items()):
            worst, heaviest = max(rows, key=lambda r: r["ratio"]), max(rows, key=lambda r: r["bytes"])
            means = {key: statistics.fmean(r[field] for r in rows) for key, field in MEANS.items()}
            entry = {"page": page, "T": num_tokens, "steps": len(rows), "worst": worst, **means, "bytes": heaviest}
            summary.append(entry | {"load": [v for r in rows for v in r["load"]]})
    return summary


def goal_for(num_tokens: int) -> float | None:
    return GOALS["small"] if num_tokens <= 64 else GOALS["large"] if num_tokens == 1024 else None


def paint_row(browser: dict, page: str) -> str:
    """A page's Enter-to-painted at T = 64 and 1,024, and their ratio against the goal."""
    small, large = (next((r for r in browser.values() if r["page"] == page and r["T"] == t), None) for t in (64, 1024))
    ratio = large["painted_ms"] / small["painted_ms"] if small and large else float("nan")
    times = f"{ratio:.1f}×" + ("" if ratio != ratio else flag(ratio, GOALS["paint"]))
    cells = ["–" if r is None else f"{_fmt_ms(r['finished_ms'])} · {_fmt_ms(r['painted_ms'])}" for r in (small, large)]
    kib = "–" if large is None else f"{large['received_bytes'] / 1024:,.0f}"
    loads, either = [v for r in (small, large) if r for v in r["load"]], large or small
    return row(_page_name(page), str(either["step"]), *cells, times, str(either["plots"]), kib, _load(loads))


def flag(value: float, goal: float | None) -> str:
    return "" if goal is None else (" ✅" if value <= goal else " ❌")


SHELL = "shell (entry script, empty page)"
SERVER_INTROS = (  # server_tables' tables
    "**Server time of a rerun after a sentence change** (script run timed inside the server; median of {counts} new "
    "sentences per page and step). Each cell: the worst step's time as a multiple of the bare page at the same T (and "
    "its step), then the mean over all steps. Goals: ≤ 1.5× at T ≤ 64, ≤ 3× at T = 1,024.",
    "The same, in milliseconds (worst step · mean over steps; client send → `script_finished` of the worst step in "
    "brackets):",
    "The whole rerun as the user waits for it: the script *and* the post-run `gc.collect(2)`, which holds the GIL "
    "until `script_finished` has gone out (worst step's ms and × the bare page's, bare included; the collection's "
    "median ms in brackets):",
    "**Bytes sent to the browser per rerun** (websocket payloads of the rerun; the step with the most, in KiB; ⚠️ "
    "over 2 MB):",
)


def server_tables(results: dict, summary: list[dict]) -> list[str]:
    """The tables of the server phase: time (× bare, then ms), the whole rerun, bytes, and every step."""
    base, server = results["baseline"], results["server"]
    sizes, pages = sorted({s["T"] for s in summary}), list(dict.fromkeys(s["page"] for s in summary))
    found, columns = {(s["page"], s["T"]): s for s in summary}, [f"T = {t:,}" for t in sizes]

    def loads(rows: list[dict]) -> str:
        return _load([v for r in rows for v in r["load"]])

    def ratio(s: dict) -> str:
        w = s["worst"]
        return f"{w['ratio']:.1f}× ({w['step']}){flag(w['ratio'], goal_for(s['T']))} · {s['mean_ratio']:.1f}×"

    def ms(s: dict) -> str:
        return f"{_fmt_ms(s['worst']['script_ms'])} · {_fmt_ms(s['mean_ms'])} ({_fmt_ms(s['worst']['client_ms'])})"

    def rerun(r: dict, times: float, mark: str = "") -> str:
        return f"{_fmt_ms(r['total_ms'])} ({times:.1f}×{mark}; GC {_fmt_ms(r['gc_ms'])})"

    def whole(s: dict) -> str:
        rows = [r for r in server.values() if r["page"] == s["page"] and r["T"] == s["T"]]
        w = max(rows, key=lambda r: r["total_ratio"])
        return rerun(w, w["total_ratio"], flag(w["total_ratio"], goal_for(s["T"])))

    def most_bytes(s: dict) -> str:
        most = s["bytes"]["bytes_max"]
        return f"{most / 1024:,.0f} ({s['bytes']['step']})" + (" ⚠️" if most > BYTES_GOAL else "")

    def bare_ratio(b: dict, t: int) -> str:
        return f"{_fmt_ms(b['script_ms'])} ms ({b['script_ms'] / base[f'bare|{t}']['script_ms']:.2f}×)"

    repeats = {t: sorted({len(r["samples_ms"]) for r in server.values() if r["T"] == t}) for t in sizes}
    counts = ", ".join(f"{'/'.join(map(str, n))} at T = {t:,}" for t, n in repeats.items())
    if len({tuple(n) for n in repeats.values()}) == 1:
        counts = "/".join(map(str, next(iter(repeats.values()))))
    specs = (  # intro, what each T's column holds, (the bare page's and shell's cell, the shell's name), a page's cell
        (SERVER_INTROS[0].format(counts=counts), ": worst (step) · mean", (bare_ratio, SHELL), ratio),
        (SERVER_INTROS[1], " ms", None, ms),
        (SERVER_INTROS[2], "", (lambda b, t: rerun(b, b["total_ms"] / base[f"bare|{t}"]["total_ms"]), "shell"), whole),
        (SERVER_INTROS[3], "", (lambda b, t: f"{b['bytes'] / 1024:,.0f}", "shell"), most_bytes),
    )
    out = []
    for index, (intro, column, baselines, cell) in enumerate(specs):
        with_load = index == 0  # the first table has the load of each row's runs
        rows = []
        for name, label in (("bare", "bare page"), ("shell", baselines[1])) if baselines else ():
            runs = [base.get(f"{name}|{t}") for t in sizes]
            cells = [baselines[0](b, t) if b else "–" for b, t in zip(runs, sizes, strict=True)]
            rows.append(row(label, *cells, *[loads([b for b in runs if b])] * with_load))
        for p in pages:
            cells = [cell(found[p, t]) if (p, t) in found else "–" for t in sizes]
            rows.append(row(_page_name(p), *cells, *[loads([s for s in summary if s["page"] == p])] * with_load))
        header = ["page", *(c + column for c in columns), *["load"] * with_load]
        out += table(intro, " | ".join(header), "|".join(["---", *["---:"] * len(sizes), *["---"] * with_load]), rows)
    steps = []
    for page in pages:
        for step in sorted({r["step"] for r in server.values() if r["page"] == page}):
            rows = [server.get(f"{page}|{step}|{t}") for t in sizes]
            cells = [
                f"{_fmt_ms(r['script_ms'])} ({r['ratio']:.1f}×) · {r['bytes'] / 1024:,.0f} KiB" if r else "–"
                for r in rows
            ]
            steps.append(row(_page_name(page), str(step), *cells, loads([r for r in rows if r])))
    details = "<details><summary>Every page and step: server ms (× bare) and KiB per rerun</summary>"
    header, right = f"page | step | {' | '.join(columns)} | load", "|".join("---:" for _ in sizes)
    return [*out, *table(details, header, f"---|---:|{right}|---", steps), "</details>", ""]


def app_scale_tables(results: dict) -> str:
    m = results.get("machine", {})

    def loads(p: dict) -> str:
        return " → ".join(", ".join(f"{v:.2f}" for v in p[k]) for k in ("load_start", "load_end"))

    phases = [row(name, f"`{p['command']}`", p["when"], loads(p)) for name, p in results.get("phases", {}).items()]
    out = table(
        f"Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('ram_gib', '?')} GiB RAM; Python "
        f"{m.get('python')}, Streamlit {m.get('streamlit')}, plotly {m.get('plotly')}, torch {m.get('torch')}, "
        f"{m.get('chromium', '')}. The *load* columns are the 1-minute load average at each timed run "
        "(min–max); other developers share this machine.",
        "phase | command | started | load average: 1/5/15 min at start → end, or the 1-min range of its timed runs",
        "---",
        phases,
    )
    summary = page_summary(results)
    if summary:
        out += server_tables(results, summary)
    browser = results.get("browser", {})
    if browser:
        out += table(
            f"**Enter to painted in Chromium** (median of {len(next(iter(browser.values()))['samples_ms'])} sentences; "
            "the page's heaviest step; *run finished* is when the browser saw the script run end; KiB received over "
            "the websocket). Goal: T = 1,024 at most 3× T = 64.",
            "page | step | T = 64: run finished · painted ms | T = 1,024: run finished · painted ms "
            "| painted 1,024 / 64 | plots | KiB at 1,024 | load",
            "---|---:|---:|---:|---:|---:|---:|---",
            [paint_row(browser, page) for page in dict.fromkeys(r["page"] for r in browser.values())],
        )
    cold = results.get("cold")
    if cold:
        samples = {url: ", ".join(map(str, r["samples_s"])) for url, r in cold["rows"].items()}
        out += table(
            f"**Cold start** (median of {cold['repeats']}; from launching `streamlit run streamlit_app.py` to the "
            "first heatmap painted in an already running Chromium; book input; files in the OS page cache):",
            "URL | server answers /_stcore/health s | first heatmap painted s | samples s | load",
            "---|---:|---:|---|---",
            [
                row(f"`{url}`", f"{r['healthy_s']:.1f}", f"{r['painted_s']:.1f}", samples[url], _load(r["load"]))
                for url, r in cold["rows"].items()
            ],
        )
    imports = results.get("imports")
    if imports:
        top = ", ".join(f"`{e['module']}` {e['cumulative_ms']:,.0f} ms" for e in imports["top_level"][:6])
        own = ", ".join(f"`{e['module']}` {e['self_ms']:,.0f} ms" for e in imports["by_self"][:6])
        out += [
            f"Imports (median of {len(imports['attention_s'])} fresh processes, load {_load(imports['load'][:1])}): "
            f"`import attention` {median(imports['attention_s']):.2f} s, `import explorer.views` "
            f"{median(imports['explorer_compute_s']):.2f} s, `import streamlit` "
            f"{median(imports['streamlit_s']):.2f} s. "
            f'`python -X importtime -c "import attention"`: {imports["importtime_total_ms"]:,.0f} ms in all; what '
            f"`attention` imports, largest first (cumulative): {top}; largest single modules (self): {own}.",
            "",
        ]
    out += verdicts(results, summary)
    return "\n".join(out)


def verdicts(results: dict, summary: list[dict]) -> list[str]:
    """One line per goal: met or not, with the measured numbers (``summary``: ``page_summary(results)``)."""
    lines = ["**Goals** (computed from the tables above):", ""]
    for label, test, goal in (
        ("≤ 1.5× the bare page at T ≤ 64", lambda t: t <= 64, GOALS["small"]),
        ("≤ 3× the bare page at T = 1,024", lambda t: t == 1024, GOALS["large"]),
    ):
        rows = [s for s in summary if test(s["T"])]
        if not rows:
            continue
        missed = [s for s in rows if s["worst"]["ratio"] > goal]
        if not missed:
            lines.append(f"- {label}: **met** on every page (worst {max(s['worst']['ratio'] for s in rows):.1f}×).")
        else:
            worst = ", ".join(
                f"{_page_name(s['page'])} T={s['T']} step {s['worst']['step']} {s['worst']['ratio']:.1f}× "
                f"({_fmt_ms(s['worst']['script_ms'])} vs {_fmt_ms(s['worst']['bare_ms'])} ms)"
                for s in sorted(missed, key=lambda s: -s["worst"]["ratio"])[:6]
            )
            lines.append(
                f"- {label}: **not met** on {len({s['page'] for s in missed})} of {len({s['page'] for s in rows})} "
                f"pages; worst: {worst}."
            )
    big = [r for r in results["server"].values() if r["T"] == 1024]
    if big:
        over, most = [r for r in big if r["bytes_max"] > BYTES_GOAL], max(big, key=lambda r: r["bytes_max"])
        lines.append(
            f"- ≤ 2 MB per rerun at T = 1,024: **{'met' if not over else 'not met'}**; largest "
            f"{most['bytes_max'] / 1e6:.2f} MB ({_page_name(most['page'])} step {most['step']})"
            + ("; over: " + ", ".join(f"{_page_name(r['page'])} step {r['step']}" for r in over) + "." if over else ".")
        )
    browser = results.get("browser", {})
    pairs = [  # (page, painted at T = 1,024 / at 64, its row at 1,024, at 64)
        (r["page"], r["painted_ms"] / small["painted_ms"], r, small)
        for r in browser.values()
        if r["T"] == 1024 and (small := browser.get(f"{r['page']}|{r['step']}|64"))
    ]
    if pairs:
        missed, worst = [p for p in pairs if p[1] > GOALS["paint"]], max(pairs, key=lambda p: p[1])
        lines.append(
            f"- Enter-to-painted at T = 1,024 ≤ 3× T = 64: **{'met' if not missed else 'not met'}** "
            f"(worst {_page_name(worst[0])}: {worst[1]:.1f}×, {_fmt_ms(worst[2]['painted_ms'])} vs "
            f"{_fmt_ms(worst[3]['painted_ms'])} ms)"
            + (f"; missed on {', '.join(_page_name(p[0]) for p in missed)}." if missed else ".")
        )
    errors = [(k, r["errors"]) for k, r in results["server"].items() if r["errors"]]
    if errors:
        lines.append(f"- Errors during the runs: {errors[:5]}")
    lines.append("")
    return lines

"""Server CPU of a cell selection against a Next click (issue 25).

Usage, from the repository root (behind "A cell selection (issue 25)" in BENCHMARKS.md)::

    python -m benchmarks.cell_select --sizes 6,30,64 --repeats 15

A protocol client (``protocol.BrowserStudent``) opens the Causal mask page at step 1 with a sentence of T
tokens, then repeats: select a cell of the unmasked weights (the selection event a click sends, in the
page's fragment), Next, Previous. Each run is timed inside the server (``launch.TimedServer``: the script's
CPU and the garbage collection after it), as ``benchmarks.actions`` times its actions. It prints the median
of each and writes ``artifacts/cell_select/costs.json`` with the load averages at the start and the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time

from benchmarks.actions import parse_list, run_facts, timed
from benchmarks.launch import ROOT, TimedServer
from benchmarks.machine import loadavg
from benchmarks.meter import percentile
from benchmarks.protocol import BrowserStudent, warm
from benchmarks.sentences import Sentences, open_typed

ARTIFACTS = ROOT / "artifacts" / "cell_select"
PAGE, CHART = "causal_mask", "unmasked-weights"  # step 1's heatmap
ACTIONS = ("select", "next", "previous")


def selection(row: int, col: int, num_tokens: int) -> str:
    """The widget value plotly's click on cell (row, col) sends: one point of the layer of cells."""
    point = {"curve_number": 1, "point_number": row * num_tokens + col, "point_index": row * num_tokens + col}
    point |= {"x": col, "y": row, "customdata": {"0": row, "1": col}}
    return json.dumps(
        {"selection": {"points": [point], "point_indices": [point["point_index"]], "box": [], "lasso": []}}
    )


async def walk(server, num_tokens: int, repeats: int, sentences: Sentences) -> list[dict]:
    student = await open_typed(BrowserStudent(server.base), PAGE, num_tokens, sentences, step="1")
    rng, rows = random.Random(num_tokens), []
    for _ in range(repeats):
        chart_id, fragment = student.charts[CHART]
        row, col = rng.randrange(num_tokens), rng.randrange(num_tokens)
        student.states[chart_id] = ("string_value", selection(row, col, num_tokens))
        message = student.request(states=student.states, fragment_id=fragment)
        rows.append(await timed(server, student, "select", message))
        rows.append(await timed(server, student, "next", student.message(click=f"next:{PAGE}")))
        rows.append(await timed(server, student, "previous", student.message(click=f"prev:{PAGE}")))
    await student.close()
    if "cell=" not in rows[0]["query"]:
        raise RuntimeError(f"the selection did not select a cell: {rows[0]['query']}")
    return [{**r, "T": num_tokens} for r in rows]


def summary(rows: list[dict]) -> list[dict]:
    out = []
    for num_tokens in sorted({r["T"] for r in rows}):
        for action in ACTIONS:
            group = [r for r in rows if r["T"] == num_tokens and r["action"] == action]
            ok = [r for r in group if not r["error"]]
            entry = {"T": num_tokens, "action": action, "runs": len(group), "errors": len(group) - len(ok)}
            for field in ("cpu_ms", "script_cpu_ms", "client_ms", "kib"):
                entry[field] = percentile([r[field] for r in ok], 50)
            entry["load"] = [min(r["load"] for r in group), max(r["load"] for r in group)]
            out.append(entry)
    return out


async def main(args) -> dict:
    server = TimedServer("streamlit_app.py", "cell_select", ARTIFACTS)
    server.start()
    started, load_start = time.strftime("%Y-%m-%d %H:%M"), loadavg()
    try:
        sentences = Sentences(seed=args.seed)
        await warm(server.base, [PAGE], make=lambda: sentences.make(30))  # first runs are not timed
        rows = []
        for num_tokens in args.sizes:
            rows += await walk(server, num_tokens, args.repeats, sentences)
    finally:
        server.stop()
    result = {**run_facts(started, load_start), "rows": rows, "summary": summary(rows)}
    result["command"] = result["command"].replace("benchmarks.actions", "benchmarks.cell_select")
    for e in result["summary"]:
        print(
            f"T={e['T']:3d} {e['action']:8s} server CPU p50 {e['cpu_ms']:6.1f} ms (script {e['script_cpu_ms']:5.1f}),"
            f" sent {e['kib']:6.1f} KiB, errors {e['errors']}, load {e['load'][0]:.2f}-{e['load'][1]:.2f}"
        )
    print(f"load average at start {load_start}, at end {result['loadavg_end']}")
    return result


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=lambda t: parse_list(t, int), default=[6, 30, 64])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    result = asyncio.run(main(args))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "costs.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    cli()

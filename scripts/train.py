"""Retrain the models that ship in attention/weights/, from fixed seeds, on one CPU thread.

    python scripts/train.py              # everything: about 18 minutes on one thread of a busy 2-core machine
    python scripts/train.py reversal     # the Bahdanau reversal models, with and without attention (~13 min)
    python scripts/train.py gpt          # the small GPT on "The Verdict", ~5 min (needs ../shared/data/the-verdict.txt)

Each prints its loss as it goes and writes its weights (safetensors) and a small JSON of what it
measured, with the time it took and the command that made it. ``--steps`` overrides the step count
for a quick try; the shipped files use the defaults.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attention import BOOK_SENTENCE, tokenize
from attention.after_chapter import training
from attention.before_chapter import reversal

REVERSAL_STEPS = 2500
GPT_STEPS = 1000
TYPED_SENTENCE = "The quick brown fox jumps over the lazy dog while the old cat sleeps on a warm mat by the door"


def _progress(name: str):
    def report(step: int, loss: float) -> None:
        print(f"  {name} step {step:5d}  loss {loss:.4f}", flush=True)

    return report


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {path} ", flush=True)


def train_reversal(out: Path, steps: int, command: str) -> None:
    start = time.perf_counter()
    models, finals = {}, {}
    for use_attention in (True, False):
        name = "with attention" if use_attention else "without attention"
        print(f"Reversal, {name}: {steps} steps", flush=True)
        model, log = reversal.train_reversal(use_attention, steps, progress=_progress(name))
        reversal.save_reversal(model, out / reversal.REVERSAL_FILES[use_attention])
        models[use_attention], finals[name] = model, {"final_loss": log.losses[-1], "seconds": log.seconds}
    curve = reversal.measure_bottleneck(models[True], models[False])
    for length, a, b in zip(curve.lengths, curve.with_attention, curve.without_attention, strict=True):
        print(f"  length {length:3d}: with attention {a:.3f}, without {b:.3f}", flush=True)
    alignments = {}
    for label, text in (("book", BOOK_SENTENCE), ("typed", TYPED_SENTENCE)):
        symbols = reversal.reversal_symbols(tokenize(text).ids)  # (num_tokens,)
        with torch.no_grad():
            logits, weights = models[True](symbols.unsqueeze(0))  # (1, T, V), (1, T, T)
        alignments[label] = {
            "text": text,
            "num_tokens": symbols.numel(),
            "mean_max_weight": weights[0].max(-1).values.mean().item(),
            "weight_on_anti_diagonal": weights[0].flip(-1).diagonal().mean().item(),
            "accuracy": (logits[0].argmax(-1) == symbols.flip(0)).float().mean().item(),
        }
        print(f"  {label} sentence: {alignments[label]}", flush=True)
    _write_json(
        out / reversal.REVERSAL_METRICS,
        {
            "task": f"reverse random sentences of {reversal.REVERSAL_VOCAB} symbols",
            "train_lengths": list(reversal.REVERSAL_LENGTHS),
            "steps": steps,
            "seed": reversal.REVERSAL_SEED,
            "models": finals,
            "accuracy_by_length": {
                "lengths": list(curve.lengths),
                "with_attention": [round(a, 4) for a in curve.with_attention],
                "without_attention": [round(b, 4) for b in curve.without_attention],
            },
            "alignment": alignments,
            "seconds": round(time.perf_counter() - start, 1),
            "command": command,
            "torch": torch.__version__,
            "machine": platform.machine(),
        },
    )


def train_gpt(out: Path, steps: int, command: str) -> None:
    path = training.verdict_path()
    if not path.is_file():
        sys.exit(f"{path} is missing: the GPT trains on the book's text, the-verdict.txt.")
    print(f"GPT on {path.name}: {steps} steps, {training.VERDICT_CONFIG}", flush=True)
    model, log = training.train_gpt(path.read_text(encoding="utf-8"), steps=steps, progress=_progress("gpt"))
    training.save_gpt(model, out / training.VERDICT_WEIGHTS.name)
    print(f"  train loss {log.train_loss:.3f}, val loss {log.val_loss:.3f}, val accuracy {log.val_accuracy:.3f}")
    _write_json(
        out / training.VERDICT_METRICS.name,
        {
            "text": path.name,
            "config": asdict(model.cfg),
            "steps": steps,
            "seed": training.VERDICT_SEED,
            "story_vocab": log.story_vocab,
            "train_loss": round(log.train_loss, 4),
            "val_loss": round(log.val_loss, 4),
            "val_accuracy": round(log.val_accuracy, 4),
            "losses": [round(x, 4) for x in log.losses],
            "seconds": round(log.seconds, 1),
            "command": command,
            "torch": torch.__version__,
            "machine": platform.machine(),
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", choices=("all", "reversal", "gpt"), default="all")
    parser.add_argument("--steps", type=int, help="override the step count (for a quick try)")
    parser.add_argument("--out", type=Path, default=reversal.WEIGHTS_DIR, help="folder for weights and metrics")
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python " + " ".join(shlex.quote(a) for a in ["scripts/train.py", *sys.argv[1:]])
    if args.model in ("all", "reversal"):
        train_reversal(args.out, args.steps or REVERSAL_STEPS, command)
    if args.model in ("all", "gpt"):
        train_gpt(args.out, args.steps or GPT_STEPS, command)


if __name__ == "__main__":
    main()

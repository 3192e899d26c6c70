"""Time per new token with and without the KV cache, side by side in one run (``attention.measuring.generation_speed``):
``python -m benchmarks.generation --repeats 7 --threads 1``, the small GPT and a GPT-2-shaped random model."""

import argparse

import torch

from attention.after_chapter.generation import random_gpt
from attention.after_chapter.training import load_trained_gpt
from attention.measuring.generation_speed import LENGTHS, measure_token_times

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--repeats", type=int, default=7)
parser.add_argument("--threads", type=int, default=1)
args = parser.parse_args()
torch.set_num_threads(args.threads)
for name, model in (("small GPT (The Verdict)", load_trained_gpt()), ("GPT-2-shaped, random weights", random_gpt())):
    print(f"## {name}, tokens {LENGTHS[0]}-{LENGTHS[-1]}\n{measure_token_times(model, repeats=args.repeats).table()}\n")

"""The timing of one new token with and without the cache: what it returns and what it refuses.

Times on a shared machine are not asserted; the measured numbers are reported by hand.
"""

from dataclasses import replace

import pytest

from attention.after_chapter.generation import random_gpt
from attention.constants import VERDICT_CONFIG
from attention.measuring.generation_speed import measure_token_times

TINY = replace(VERDICT_CONFIG, vocab_size=50, context_length=24, emb_dim=16, n_heads=4, n_layers=2)


def test_it_times_every_length_both_ways_and_records_the_load():
    model = random_gpt(TINY, seed=1).train()
    times = measure_token_times(model, lengths=(4, 12, 24), repeats=2)
    assert times.lengths == (4, 12, 24)
    assert len(times.with_cache_s) == len(times.without_cache_s) == 3
    assert all(t > 0 for t in times.with_cache_s + times.without_cache_s)
    assert times.growth_with_cache == times.with_cache_s[-1] / times.with_cache_s[0]
    assert len(times.load_before) == len(times.load_after) == 3
    assert model.training  # the model's mode is given back
    table = times.table().splitlines()
    assert len(table) == 5
    assert table[1].split()[0] == "4"
    assert "load average" in table[-1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lengths": (1, 10)}, "between 2"),
        ({"lengths": (10, 25)}, "context_length, 24"),
        ({"lengths": ()}, "whole numbers"),
        ({"lengths": (4.0,)}, "whole numbers"),
        ({"lengths": (4,), "repeats": 0}, "repeats"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        measure_token_times(random_gpt(TINY, seed=1), **kwargs)

"""Stage 9, measuring: every implementation computes ``MultiHeadAttention``'s output, ``measure`` returns
sane medians and honest peak memory, and it rejects sizes it cannot run."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tolerances import attention_bounds

import attention
from attention import IMPLEMENTATIONS, MultiHeadAttention, SpeedResult, build, expected_attention_bytes, measure
from attention.measuring.speed import (
    LOOP_OVERHEAD,
    MAX_WEIGHTS_BYTES,
    PROFILE_S,
    choose_sizes,
    memory_growth,
    peak_memory_bytes,
    predicted_seconds,
    time_growth,
)
from benchmarks import bench_attention

MIB = 2**20
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("name", list(IMPLEMENTATIONS))
def test_every_implementation_gives_multihead_attentions_output(random_tensor, name, qkv_bias):
    mha = build(MultiHeadAttention, 7, 12, 12, 9, 0.0, num_heads=3, qkv_bias=qkv_bias)
    x = random_tensor(1, 2, 9, 12) * 4 - 2  # (b=2, T=9, d=12)

    with torch.inference_mode():
        output = IMPLEMENTATIONS[name].build(mha)(x)

        assert output.shape == (2, 9, 12)
        assert torch.allclose(output, mha(x), **attention_bounds(mha, x).close("output"))


def test_measure_returns_positive_medians_and_reports_progress():
    progress = []
    result = measure(
        list(IMPLEMENTATIONS),
        [32, 16],
        d_model=8,
        num_heads=2,
        batch_size=2,
        repeats=2,
        on_progress=lambda done, total, label: progress.append((done, total, label)),
    )

    assert result.implementations == tuple(IMPLEMENTATIONS)
    assert result.num_tokens == (16, 32)  # sorted
    for name in IMPLEMENTATIONS:
        assert len(result.time_ms[name]) == len(result.peak_memory_mib[name]) == 2
        assert all(0 < t < 10_000 for t in result.time_ms[name]), name
        assert all(m > 0 for m in result.peak_memory_mib[name]), name
        assert result.max_abs_difference[name] < 1e-5, name
    total = 2 * len(IMPLEMENTATIONS) * (2 + 2)
    assert [done for done, _, _ in progress] == list(range(1, total + 1))
    assert {t for _, t, _ in progress} == {total}
    assert "T = 32: memory of fast_multihead" in [label for _, _, label in progress]
    assert progress[-1][2].startswith("T = 32: timing")  # the later rounds follow the first pass


def test_memory_counts_the_attention_matrices_each_implementation_keeps():
    """At T=256 one (1, 2, T, T) tensor is 512 KiB, far more than the (T, d=16) projections."""
    result = measure(list(IMPLEMENTATIONS), [256], d_model=16, num_heads=2, repeats=1)
    one = expected_attention_bytes(1, 2, 256) / MIB
    peak = {name: values[0] / one for name, values in result.peak_memory_mib.items()}

    assert peak["MultiHeadAttention"] >= 3  # attn_scores, the scaled scores and attn_weights at the softmax
    assert 2 <= peak["trace"] < 2.5  # it keeps attn_scores and attn_weights, the softmax in place in the latter
    assert peak["nn.MultiheadAttention"] >= 2  # the scores and the returned weights
    assert peak["MultiHeadAttentionWrapper"] < peak["MultiHeadAttention"]  # one head's tensors at a time
    assert peak["F.scaled_dot_product_attention"] < 0.5
    assert peak["fast_multihead"] < 0.5


def test_peak_memory_sees_intermediates_that_are_freed_before_the_call_returns():
    x = torch.zeros(1)
    kept = peak_memory_bytes(lambda x: torch.ones(1000, 1000), x)
    transient = peak_memory_bytes(lambda x: (torch.ones(1000, 1000) * 2).sum(), x)  # two 4 MB tensors at once

    assert 4_000_000 <= kept < 4_100_000
    assert 8_000_000 <= transient < 8_100_000


def test_ratios_divide_medians_from_the_same_run_and_the_load_average_is_recorded():
    result = measure(["trace", "fast_multihead"], [8, 16], d_model=8, num_heads=2, repeats=3)

    assert result.ratio("trace", "trace") == (1.0, 1.0)
    expected = tuple(a / b for a, b in zip(result.time_ms["fast_multihead"], result.time_ms["trace"], strict=True))
    assert result.ratio("fast_multihead", "trace") == pytest.approx(expected)
    assert result.ratio("trace", "fast_multihead", "peak_memory_mib")[-1] > 1  # trace keeps T × T tensors
    for load in (result.load_before, result.load_after):
        assert len(load) == 3
        assert all(value >= 0 for value in load)


def test_the_tensor_bound_can_be_raised_for_a_benchmark():
    request = {"d_model": 8, "num_heads": 8, "batch_size": 1, "repeats": 1}
    with pytest.raises(ValueError, match="the limit is 0 MiB"):
        measure(["fast_multihead"], [64], max_weights_bytes=1000, **request)  # one (1, 8, 64, 64) tensor: 128 KiB
    assert measure(["fast_multihead"], [64], max_weights_bytes=2**17, **request).num_tokens == (64,)


def test_the_command_line_prints_one_table_per_length_with_ratios_and_load(capsys):
    bench_attention.main(["--size", "toy", "--tokens", "4,6", "--repeats", "1", "--threads", "1", "--only", "trace",
                "--only", "nn.MultiheadAttention"])  # fmt: skip
    out = capsys.readouterr().out

    assert "Command: `python -m benchmarks.bench_attention --size toy --tokens 4,6" in out
    assert out.count("| trace | ") == out.count("| nn.MultiheadAttention | ") == 2
    assert "#### b=2, T=4, d=3, h=3" in out
    assert "#### b=2, T=6, d=3, h=3" in out
    assert "Load average before: " in out
    reference_rows = [line for line in out.splitlines() if line.startswith("| nn.MultiheadAttention | ")]
    assert all(line.split(" | ")[2] == "1.00" for line in reference_rows)


def test_the_command_line_explains_bad_sizes():
    with pytest.raises(SystemExit, match="num_tokens must be between 1 and"):
        bench_attention.main(["--size", "toy", "--tokens", "0"])


def test_memory_does_not_depend_on_the_order_of_sizes():
    first = measure(["trace", "fast_multihead"], [16, 48], d_model=8, num_heads=2, repeats=1)
    second = measure(["fast_multihead", "trace"], [48, 16], d_model=8, num_heads=2, repeats=1)

    assert first.peak_memory_mib == second.peak_memory_mib


def test_expected_attention_bytes():
    assert expected_attention_bytes(2, 3, 10) == 2 * 3 * 10 * 10 * 4
    assert expected_attention_bytes(1, 1, 10, element_size=2) == 200


def result_with(num_tokens, values) -> SpeedResult:
    series = {"MultiHeadAttention": tuple(values)}
    return SpeedResult(("MultiHeadAttention",), tuple(num_tokens), series, series, {}, 1, 8, 2, 1, "cpu")


def test_growth_exponent_is_the_log_log_slope_through_the_largest_sizes():
    quadratic_at_the_end = result_with([4, 8, 16, 32], [7.0, 1.0, 4.0, 16.0])
    assert quadratic_at_the_end.growth_exponent("MultiHeadAttention") == pytest.approx(2.0)
    assert result_with([8, 16], [5.0, 10.0]).growth_exponent("MultiHeadAttention", "peak_memory_mib") == pytest.approx(
        1
    )
    noisy = result_with([8, 16, 32], [1.0, 2.5, 4.0]).growth_exponent("MultiHeadAttention")
    assert noisy == pytest.approx(1.0)  # the fitted slope, not the last segment's 0.68
    assert math.isnan(result_with([8], [5.0]).growth_exponent("MultiHeadAttention"))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"implementations": []}, "Choose implementations"),
        ({"implementations": ["flash"]}, "Choose implementations"),
        ({"implementations": ["trace", "trace"]}, "each once"),
        ({"num_tokens_list": []}, "at least one"),
        ({"num_tokens_list": [0]}, "num_tokens"),
        ({"num_tokens_list": [5000]}, "num_tokens"),
        ({"num_tokens_list": [8.5]}, "whole number"),
        ({"d_model": 0}, "d_model"),
        ({"num_heads": 3}, "divisible"),
        ({"batch_size": 65}, "batch_size"),
        ({"repeats": 0}, "repeats"),
        ({"device": "tpu"}, "device"),
        ({"batch_size": 64, "num_heads": 64, "d_model": 64, "num_tokens_list": [1024]}, "MiB"),
    ],
)
def test_rejects_what_it_cannot_measure(changes, message):
    request = {"implementations": ["trace"], "num_tokens_list": [8], "d_model": 8, "num_heads": 2, **changes}
    implementations, num_tokens_list = request.pop("implementations"), request.pop("num_tokens_list")

    with pytest.raises(ValueError, match=message):
        measure(implementations, num_tokens_list, **request)


def test_the_memory_bound_allows_the_pages_largest_sizes():
    assert expected_attention_bytes(4, 12, 1024) <= MAX_WEIGHTS_BYTES


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_explained():
    with pytest.raises(ValueError, match="needs a GPU"):
        measure(["trace"], [8], d_model=8, num_heads=2, device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_measures_on_cuda():
    result = measure(list(IMPLEMENTATIONS), [64, 256], d_model=32, num_heads=4, repeats=2, device="cuda")
    one = expected_attention_bytes(1, 4, 256) / MIB

    assert result.device == "cuda"
    for name in IMPLEMENTATIONS:
        assert all(t > 0 for t in result.time_ms[name]), name
        assert result.max_abs_difference[name] < 1e-4, name
    assert result.peak_memory_mib["trace"][-1] >= 2 * one  # attn_scores and attn_weights
    assert result.peak_memory_mib["fast_multihead"][-1] < one


def test_exported_from_the_package():
    assert attention.measure is measure
    assert set(attention.IMPLEMENTATIONS) == {
        "MultiHeadAttention",
        "MultiHeadAttentionWrapper",
        "trace",
        "nn.MultiheadAttention",
        "nn.MultiheadAttention without attention weights",
        "F.scaled_dot_product_attention",
        "fast_multihead",
    }


def test_a_time_budget_measures_the_smallest_t_and_skips_what_would_not_fit():
    result = measure(["MultiHeadAttention", "trace"], [8, 16, 32], d_model=8, num_heads=2, repeats=3, time_budget_s=0)

    assert result.num_tokens == (8,)
    assert result.skipped_tokens == (16, 32)
    assert result.rounds == (1,)  # at least one round, however small the budget
    assert len(result.time_ms["trace"]) == 1


def test_without_a_budget_every_t_runs_every_round():
    result = measure(["MultiHeadAttention"], [8, 16], d_model=8, num_heads=2, repeats=2)

    assert result.num_tokens == (8, 16)
    assert result.skipped_tokens == ()
    assert result.rounds == (2, 2)


def rounds_growing_as(sizes, exponent, noise=(1.0, 1.0, 1.0), fixed_ms=0.0):
    """Three timing rounds per T: fixed_ms + T^exponent / 1000 ms, each round scaled by one of ``noise``."""
    return [tuple((fixed_ms + t**exponent / 1000) * n for n in noise) for t in sizes]


def test_time_growth_fits_where_t_by_t_dominates_with_a_narrow_interval_from_steady_rounds():
    sizes = [16, 32, 64, 128, 256, 512]
    growth = time_growth(sizes, rounds_growing_as(sizes, 2.0, noise=(1.0, 1.02, 0.98), fixed_ms=0.3), d_model=64)

    assert growth.num_tokens == (128, 256, 512)  # T ≥ 2 d_model, and ≥ 10× the time at T = 16 (0.556 ms)
    assert growth.exponent == pytest.approx(2.0, abs=0.05)
    assert growth.low <= growth.exponent <= growth.high
    assert growth.high - growth.low < 0.1
    assert growth.clear


def test_time_growth_leaves_out_the_sizes_where_a_fixed_cost_dominates():
    sizes = [128, 256, 512, 1024]
    growth = time_growth(sizes, rounds_growing_as(sizes, 2.0, fixed_ms=40.0), d_model=16)

    assert growth is None  # 40 ms fixed: only T = 1024 takes 10× T = 128's time, and one T fits nothing


def test_time_growth_cannot_tell_below_two_d_model_or_from_one_round():
    sizes = [64, 128, 256]
    assert time_growth(sizes, rounds_growing_as(sizes, 2.0), d_model=256) is None  # every T < 2 d_model
    one_round = [(t**2 / 1000,) for t in [16, 128, 256, 512]]
    assert time_growth([16, 128, 256, 512], one_round, d_model=32) is None


def test_time_growth_with_disagreeing_rounds_is_not_clear():
    sizes = [16, 128, 256, 512]
    rounds = [(0.1, 0.1, 0.1), (16.0, 40.0, 8.0), (65.0, 30.0, 200.0), (260.0, 900.0, 150.0)]
    growth = time_growth(sizes, rounds, d_model=32)

    assert growth is not None
    assert growth.high - growth.low > attention.measuring.speed.MAX_SPREAD
    assert not growth.clear


def test_memory_growth_uses_only_the_sizes_where_one_t_by_t_tensor_outweighs_the_linear_ones():
    sizes = [32, 64, 128, 256, 512]  # d_model 64, 4 heads: 4 T ≥ 8 · 64 from T = 128
    peaks = [0.5, 0.6, 1.0, 3.0, 12.0]
    growth = memory_growth(sizes, peaks, d_model=64, num_heads=4)

    assert growth.num_tokens == (128, 256, 512)
    assert growth.low == pytest.approx(math.log2(3.0)) and growth.high == pytest.approx(2.0)
    assert memory_growth([32, 64], [0.5, 0.6], d_model=64, num_heads=4) is None


def test_measure_keeps_each_rounds_median_and_its_growth_reads_them():
    result = measure(["trace"], [8, 16], d_model=8, num_heads=2, repeats=3)

    assert [len(r) for r in result.round_ms["trace"]] == list(result.rounds) == [3, 3]
    for median, rounds in zip(result.time_ms["trace"], result.round_ms["trace"], strict=True):
        assert min(rounds) <= median <= max(rounds)
    assert result.time_growth("trace") is None  # T = 16 < 2 d_model: the fixed cost dominates


def test_a_plan_takes_the_smallest_sizes_whose_predicted_measurement_fits():
    probe = [0.010] * 7  # each implementation: 10 ms a call at T = 256
    plan = choose_sizes(probe, [1024, 16, 64, 256, 512], repeats=3, target_s=3.0, min_sizes=3)

    costs = [predicted_seconds(probe, t, 3) for t in (16, 64, 256, 512, 1024)]
    assert costs == sorted(costs)  # larger T, longer
    assert costs[3] == pytest.approx(LOOP_OVERHEAD * 7 * (6 * 0.040 + PROFILE_S))  # T = 512: each call 4× the probe's
    assert plan.num_tokens == (16, 64, 256)
    assert plan.predicted_s == pytest.approx(sum(costs[:3])) and plan.predicted_s <= 3.0
    assert plan.next_tokens == 512 and plan.next_s == pytest.approx(sum(costs[:4])) and plan.next_s > 3.0
    assert plan.probe_ms == pytest.approx(70)


def test_a_plan_keeps_its_smallest_sizes_however_slow_and_every_size_when_all_fit():
    assert choose_sizes([1.0] * 7, [16, 32, 64, 128], 3, target_s=0.1, min_sizes=3).num_tokens == (16, 32, 64)
    everything = choose_sizes([1e-5] * 7, [16, 32, 64, 128], 3, target_s=10, min_sizes=3)
    assert everything.num_tokens == (16, 32, 64, 128) and everything.next_tokens is None


def test_plan_measurement_probes_every_implementation_and_returns_a_plan():
    plan = attention.plan_measurement(
        list(IMPLEMENTATIONS), [16, 32, 64], d_model=16, num_heads=2, repeats=1, target_s=60
    )

    assert plan.num_tokens == (16, 32, 64)
    assert plan.probe_ms > 0 and plan.predicted_s > 0


def test_peak_memory_writes_no_profiler_lines_to_stderr():
    code = "import torch, attention.measuring.speed as s; print(s.peak_memory_bytes(torch.ones, torch.tensor(3)))"
    env = {key: value for key, value in os.environ.items() if key != "KINETO_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT)

    assert int(done.stdout) >= 4  # one float32 made: the measurement still works
    assert "profiler_start" not in done.stderr and "USDT" not in done.stderr

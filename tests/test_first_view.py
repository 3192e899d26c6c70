"""The first page's stored numbers (``explorer.models``) are what the torch code computes, and are
handed out only for the inputs, seed and size they were computed from."""

import dataclasses

import numpy as np
import pytest

from explorer import models
from explorer.settings import DEFAULTS, TEXT
from explorer.views import chapter

REGENERATE = "the torch code changed: run `python scripts/first_view.py` and commit explorer/data/"


def book_inputs() -> np.ndarray:
    return models.prepared(DEFAULTS).inputs


def test_the_stored_view_is_what_the_torch_code_computes():
    stored = models.stored_why_view(book_inputs(), DEFAULTS.seed, chapter.WHY_HIDDEN_SIZE)
    assert stored is not None, "no stored first view: run `python scripts/first_view.py`"
    computed = chapter.computed_why_view(book_inputs(), DEFAULTS.seed, chapter.WHY_HIDDEN_SIZE)
    for field in dataclasses.fields(models.WhyView):
        want, got = getattr(computed, field.name), getattr(stored, field.name)
        if isinstance(want, np.ndarray):
            assert got.shape == want.shape and got.dtype == want.dtype, field.name
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6, err_msg=f"{field.name}: {REGENERATE}")
            assert not got.flags.writeable  # shared by every session, like a cached view
        else:
            assert got == want and type(got) is type(want), field.name


def test_the_book_inputs_are_the_books_tensor_without_torch():
    import attention

    assert np.array_equal(book_inputs(), attention.BOOK_INPUTS.numpy())
    assert book_inputs().dtype == np.float32


def test_the_first_page_at_the_defaults_gets_the_stored_view(monkeypatch):
    def refuse(*args):
        raise AssertionError("the book's first view was computed, not read from the store")

    monkeypatch.setattr(chapter, "computed_why_view", refuse)
    chapter.why_view.clear()
    try:
        view = chapter.why_view(DEFAULTS, chapter.WHY_HIDDEN_SIZE)
    finally:
        chapter.why_view.clear()
    stored = models.stored_why_view(book_inputs(), DEFAULTS.seed, chapter.WHY_HIDDEN_SIZE)
    assert all(
        np.array_equal(a, b) for a, b in zip(dataclasses.astuple(view), dataclasses.astuple(stored), strict=True)
    )


@pytest.mark.parametrize(
    ("changed", "hidden_size"),
    [({"seed": 124}, 16), ({}, 8), ({"source": TEXT, "text": "Your journey starts with one step", "d_in": 3}, 16)],
)
def test_any_other_view_is_computed(changed, hidden_size):
    settings = dataclasses.replace(DEFAULTS, **changed)
    prepared = models.prepared(settings)
    assert models.stored_why_view(prepared.inputs, settings.seed, hidden_size) is None
    view = chapter.why_view(settings, hidden_size)
    assert view.encoder_states.shape == (len(prepared.pieces), hidden_size)


def test_without_a_store_every_view_is_computed(tmp_path):
    missing, damaged = tmp_path / "missing.npz", tmp_path / "damaged.npz"
    damaged.write_bytes(b"not a zip file")
    for path in (missing, damaged):
        assert models.stored_why_view(book_inputs(), DEFAULTS.seed, chapter.WHY_HIDDEN_SIZE, path=path) is None


def test_saving_and_reading_back_gives_the_same_view(tmp_path):
    path = tmp_path / "view.npz"
    view = chapter.computed_why_view(book_inputs(), 7, 4)
    models.save(view, book_inputs(), 7, 4, path=path)
    again = models.stored_why_view(book_inputs(), 7, 4, path=path)
    assert all(np.array_equal(a, b) for a, b in zip(dataclasses.astuple(view), dataclasses.astuple(again), strict=True))
    assert models.stored_why_view(book_inputs()[:5], 7, 4, path=path) is None  # other inputs

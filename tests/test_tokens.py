"""Stage 1, tokens: GPT-2's ids, readable pieces, the word-level fallback and the per-user cache.

The BPE tests need GPT-2's rank file; CI points ``TIKTOKEN_CACHE_DIR`` at
``../shared/tiktoken_cache``. The fallback and cache tests hide every real
copy (environment, temp folder, network) so they run the same on any machine.
"""

import http.client
import io
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from attention import Tokenization, load_bpe, tokenize
from attention import tokens as tokens_module

REPO = Path(__file__).resolve().parents[1]
SHARED_CACHE = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or REPO.parent / "shared" / "tiktoken_cache")
CACHE_KEY = "0ea1e91bbb3a60f729a8dc8f777fd2fc07cd8df4"  # sha1 of the r50k_base URL, tiktoken's cache key
ENDOFTEXT_ID = 50256

BOOK_TEXT = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
BOOK_IDS = (
    15496,
    11,
    466,
    345,
    588,
    8887,
    30,
    220,
    50256,
    554,
    262,
    4252,
    18250,
    8812,
    2114,
    286,
    617,
    34680,
    27271,
    13,
)
BOOK_PIECES = (
    "Hello",
    ",",
    " do",
    " you",
    " like",
    " tea",
    "?",
    " ",
    "<|endoftext|>",
    " In",
    " the",
    " sun",
    "lit",
    " terr",
    "aces",
    " of",
    " some",
    "unknown",
    "Place",
    ".",
)

MARKER = re.compile(r"(.)\[(\d+)/(\d+)\]", re.DOTALL)
MIXED_SCRIPT = st.text(
    alphabet=st.sampled_from([*"ab xyz,.!\n", "🦜", "🙂", "👍", "🏽", "你", "好", "é", "ñ", "€", "ß"])
)
FRAGMENTS = st.sampled_from(["<|endoftext|>", " tea", "🦜", "  ", "\n", "someunknownPlace", "<|endoftext", "|>"])
ANY_TEXT = st.lists(st.one_of(st.text(max_size=8), FRAGMENTS), max_size=6).map("".join)


@pytest.fixture(scope="module")
def r50k() -> tiktoken.Encoding:
    """tiktoken's own r50k_base (GPT-2's ranks), loaded from the shared cache: the oracle."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(SHARED_CACHE))
        return tiktoken.get_encoding("r50k_base")


@pytest.fixture(scope="module")
def gpt2():
    """The package's GPT-2 BPE, with a clear message when the rank file is missing."""
    encoding = load_bpe()
    assert encoding is not None, "GPT-2's rank file is not reachable: set TIKTOKEN_CACHE_DIR=../shared/tiktoken_cache"
    return encoding


class FakeDownload:
    """Stands in for ``urllib.request.urlopen``: serves ``payload`` or raises ``error``."""

    def __init__(self) -> None:
        self.payload = b""
        self.error: Exception | None = urllib.error.URLError("this test has no network")
        self.error_on_read = False
        self.urls: list[str] = []

    def __call__(self, url, timeout=None):
        self.urls.append(url)
        if self.error is not None and not self.error_on_read:
            raise self.error
        return FakeResponse(self.payload, self.error)


class FakeResponse(io.BytesIO):
    def __init__(self, payload: bytes, read_error: Exception | None) -> None:
        super().__init__(payload)
        self.read_error = read_error

    def read(self, *args):
        if self.read_error is not None:
            raise self.read_error
        return super().read(*args)


@pytest.fixture
def network(monkeypatch, tmp_path) -> FakeDownload:
    """No reachable rank file: empty cache folders, a fresh per-user cache under tmp_path, a fake network.

    ``load_bpe`` is cached, so it is cleared before and after the test.
    """
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    fake = FakeDownload()
    monkeypatch.setattr(urllib.request, "urlopen", fake)
    load_bpe.cache_clear()
    yield fake
    load_bpe.cache_clear()


@pytest.fixture
def user_cache_file(tmp_path) -> Path:
    return tmp_path / "xdg" / "attention-explorer" / "tiktoken" / CACHE_KEY


def shared_ranks() -> bytes:
    return (SHARED_CACHE / CACHE_KEY).read_bytes()


def test_book_sentence_gets_gpt2_ids(gpt2):
    result = tokenize(BOOK_TEXT)

    assert isinstance(result, Tokenization)
    assert result.ids == BOOK_IDS
    assert len(result) == len(BOOK_IDS)


def test_pieces_keep_leading_spaces_and_join_back_to_the_text(gpt2):
    result = tokenize(BOOK_TEXT)

    assert result.pieces == BOOK_PIECES
    assert "".join(result.pieces) == BOOK_TEXT


def test_tokenizer_is_named(gpt2):
    result = tokenize("Your journey starts with one step")

    assert result.is_bpe
    assert "GPT-2" in result.tokenizer
    assert "fallback" not in result.tokenizer


@settings(max_examples=50, deadline=None)
@given(text=ANY_TEXT)
def test_ids_equal_tiktoken_gpt2_ids(gpt2, r50k, text):
    result = tokenize(text)

    assert list(result.ids) == r50k.encode(text, allowed_special={"<|endoftext|>"})
    assert len(result.pieces) == len(result.ids)


@settings(max_examples=50, deadline=None)
@given(text=st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=40))
def test_ascii_pieces_join_back_to_the_text(gpt2, text):
    assert "".join(tokenize(text).pieces) == text


@pytest.mark.parametrize(
    "text",
    [
        "<|endoftext|>",
        "a<|endoftext|>b",
        "<|endoftext|><|endoftext|>",
        " <|endoftext|> ",
        "<|endoftext",
        "<|fim_prefix|>",
    ],
)
def test_endoftext_never_raises(gpt2, text):
    result = tokenize(text)

    assert result.ids.count(ENDOFTEXT_ID) == text.count("<|endoftext|>")
    assert "".join(result.pieces) == text


def test_emoji_split_over_three_tokens_gets_numbered_pieces(gpt2):
    assert tokenize("🦜").pieces == ("🦜[1/3]", "🦜[2/3]", "🦜[3/3]")


def test_cjk_characters_split_over_two_tokens_get_numbered_pieces(gpt2):
    assert tokenize("你好").pieces == ("你[1/2]", "你[2/2]", "好[1/2]", "好[2/2]")


@settings(max_examples=50, deadline=None)
@given(text=MIXED_SCRIPT)
def test_split_characters_are_readable_and_rebuild_the_text(gpt2, text):
    pieces = tokenize(text).pieces

    assert all(piece for piece in pieces)
    assert not any("\ufffd" in piece for piece in pieces)
    for match in MARKER.finditer("".join(pieces)):
        part, parts = int(match[2]), int(match[3])
        assert 1 <= part <= parts and parts >= 2
    # Each split character keeps its [1/n] piece; dropping the other parts gives the text back.
    rebuilt = MARKER.sub(lambda m: m[1] if m[2] == "1" else "", "".join(pieces))
    assert rebuilt == text


def test_tokenize_rejects_what_is_not_text():
    with pytest.raises(ValueError, match="string"):
        tokenize(None)


def test_no_rank_file_falls_back_to_a_labelled_word_level_tokenizer(network):
    result = tokenize("Your journey starts  here\n")

    assert not result.is_bpe
    assert "word-level" in result.tokenizer and "fallback" in result.tokenizer
    assert result.pieces == ("Your", " journey", " starts", "  here", "\n")
    assert all(0 <= i < 50257 for i in result.ids)
    assert network.urls == [tokens_module.RANKS_URL]


def test_fallback_ids_are_stable_across_sentences_and_calls(network):
    first = tokenize("one step and one more step")
    again = tokenize("one step and one more step")
    other = tokenize("a step")

    assert first == again
    assert first.ids[1] == first.ids[5] == other.ids[1]  # " step" everywhere
    assert first.ids[0] != first.ids[1]


def test_fallback_ids_are_stable_across_processes(network, tmp_path):
    text = "Your journey starts with one step"
    here = tokenize(text)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("DATA_GYM_CACHE_DIR", "LOCALAPPDATA")}
    env.update(TIKTOKEN_CACHE_DIR=str(empty), XDG_CACHE_HOME=str(empty), TMPDIR=str(empty))
    script = (
        "import urllib.request\n"
        "def offline(*args, **kwargs):\n"
        "    raise OSError('offline')\n"
        "urllib.request.urlopen = offline\n"
        "from attention import tokenize\n"
        f"result = tokenize({text!r})\n"
        "print(result.tokenizer)\n"
        "print(list(result.ids))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, check=True, timeout=120
    )

    assert done.stdout.splitlines() == [here.tokenizer, str(list(here.ids))]


def test_fallback_keeps_endoftext_as_gpt2s_special_token(network):
    # The module docstring: "<|endoftext|> typed by a user becomes GPT-2's special token 50256".
    result = tokenize("<|endoftext|>")

    assert not result.is_bpe
    assert result.ids == (ENDOFTEXT_ID,)


@pytest.mark.parametrize(
    ("error", "on_read"),
    [
        (urllib.error.URLError("offline"), False),
        (TimeoutError("timed out"), False),
        (ConnectionResetError("reset"), True),
        (http.client.IncompleteRead(b"partial"), True),
    ],
    ids=["url-error", "timeout", "reset-while-reading", "truncated-download"],
)
def test_a_failed_download_falls_back_instead_of_raising(network, error, on_read):
    network.error, network.error_on_read = error, on_read

    result = tokenize("Hello <|endoftext|> world")

    assert not result.is_bpe
    assert "".join(result.pieces) == "Hello <|endoftext|> world"


def test_download_is_kept_in_the_per_user_cache_and_reused_offline(network, user_cache_file):
    network.payload, network.error = shared_ranks(), None

    assert load_bpe() is not None
    assert user_cache_file.read_bytes() == shared_ranks()
    assert sorted(p.name for p in user_cache_file.parent.iterdir()) == [CACHE_KEY]  # no partial file left
    assert network.urls == [tokens_module.RANKS_URL]

    network.error = urllib.error.URLError("offline now")
    load_bpe.cache_clear()
    result = tokenize(BOOK_TEXT)

    assert result.ids == BOOK_IDS
    assert network.urls == [tokens_module.RANKS_URL]  # the second load never asked the network


def test_a_corrupted_cached_file_is_ignored(network, user_cache_file):
    user_cache_file.parent.mkdir(parents=True)
    user_cache_file.write_bytes(shared_ranks()[:-10] + b"corrupted\n")

    assert load_bpe() is None
    assert not tokenize("tea").is_bpe

    network.payload, network.error = shared_ranks(), None
    load_bpe.cache_clear()

    assert tokenize(BOOK_TEXT).ids == BOOK_IDS
    assert user_cache_file.read_bytes() == shared_ranks()


def test_a_download_with_the_wrong_hash_is_neither_used_nor_kept(network, user_cache_file):
    network.payload, network.error = b"not the rank file", None

    assert load_bpe() is None
    assert not user_cache_file.exists()


def test_an_unwritable_cache_still_gives_a_working_tokenizer(network, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    network.payload, network.error = shared_ranks(), None

    assert tokenize(BOOK_TEXT).ids == BOOK_IDS


def test_no_download_means_no_network(network):
    assert load_bpe(download=False) is None
    assert network.urls == []
